"""PlanLifecycleService: plans from an action to applied (or rolled back) changes.

Each lifecycle call checks the plan's position against the state machine in
``domain/plan.py``, moves it, stores it and publishes the domain events. Execution
runs in the plan's overlay (``plan_runner.py``); apply and rollback go through the
workspace's journal, so a crash never leaves them half done.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from cleveragents.app.calls import CallContext
from cleveragents.app.editor_reads import editor_texts, read_through, reader_of
from cleveragents.app.once import RunOnce
from cleveragents.app.paging import page, parse_cursor
from cleveragents.app.plan_edits import EDITOR_RESTART_REASON, apply_files, rollback_files
from cleveragents.app.plan_ports import ActionResolver, PlanRepository, ToolLookup
from cleveragents.app.plan_runner import CallTool, Execution, PlanRunner, StepFailed
from cleveragents.app.ports import SessionRepository
from cleveragents.app.progress import Progress
from cleveragents.app.workspace import PlanOverlay, PlanWorkspace
from cleveragents.domain import events
from cleveragents.domain import plan as rules
from cleveragents.domain.actor import Budget
from cleveragents.domain.errors import PlanError, ResourceNotFoundError, StructuredError
from cleveragents.domain.plan import Phase, Plan, Profile, State, Step
from cleveragents.domain.plan_files import OverlayRecord
from cleveragents.domain.plan_results import (
    ArtifactShown,
    DecisionExplained,
    PlanArtifacts,
    PlanDiff,
    PlanMoved,
    PlanPage,
    PlanTree,
    PlanWritten,
)
from cleveragents.ids import new_id, utc_now

logger = logging.getLogger(__name__)

RESTART_REASON = "the server stopped while the plan was running"
TEXT_ARTIFACT_LIMIT = 64 * 1024
OverlayRecords = list[OverlayRecord]  # spelled here: in the service, ``list`` is its method


class PlanLifecycleService:
    # The profile of a plan created without one (the configuration's [defaults] may change it).
    default_profile = "supervised"

    def __init__(self, plans: PlanRepository, workspace: PlanWorkspace, tools: ToolLookup, actions: ActionResolver,
                 bus: events.EventBus, *, sessions: SessionRepository, call_tool: CallTool, max_steps: int = 200,
                 tool_settings: dict[str, Any] | None = None,
                 actor_for: Callable[[Plan], Any] | None = None, plan_budget: Budget | None = None,
                 may_repair: Callable[[], bool] | None = None):
        self._plans = plans
        self._sessions = sessions
        self._workspace = workspace
        self._actions = actions
        self._bus = bus
        self._runner = PlanRunner(plans, workspace, tools, bus, max_steps, call_tool, tool_settings, actor_for,
                                  plan_budget)
        self._running: dict[str, Execution] = {}
        # Set once the server stops: an execution cancelled from then on is interrupted.
        self._stopping = False
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        # Start-up repair, run once before the first call is served (if this process owns the state).
        self._ready = RunOnce(self._recover, may_repair)

    # -- helpers -------------------------------------------------------------------
    def _lock(self, plan_id: str) -> asyncio.Lock:
        # Weak values: a lock lives only while someone holds or waits for it.
        lock = self._locks.get(plan_id)
        if lock is None:
            lock = self._locks[plan_id] = asyncio.Lock()
        return lock

    async def _require(self, plan_id: str) -> Plan:
        await self._ready()
        if (execution := self._running.get(plan_id)) is not None:
            return execution.plan
        plan = await self._plans.get_plan(plan_id)
        if plan is None:
            raise ResourceNotFoundError("Plan not found", {"plan_id": plan_id})
        return plan

    async def _move(self, plan: Plan, phase: Phase, state: State, reason: str | None = None,
                    event: str | None = None, **data: Any) -> Plan:
        moved = plan.moved(phase, state, utc_now(), reason)
        if (execution := self._running.get(plan.plan_id)) is not None:
            moved = replace(moved, guidance=execution.plan.guidance)
            execution.plan = moved
        await self._plans.save_plan(moved)
        name = event or (events.PLAN_PHASE_CHANGED if phase is not plan.phase else events.PLAN_STATE_CHANGED)
        self._publish(moved, name, **data)
        return moved

    def _publish(self, plan: Plan, name: str, **data: Any) -> None:
        self._bus.publish(events.DomainEvent(name, plan.plan_id, plan.session_id, {
            "phase": plan.phase.value, "state": plan.state.value, "reason": plan.reason,
            "allowed_actions": sorted(plan.allowed), "action_name": plan.action_name, **data,
        }))

    # -- start-up recovery ---------------------------------------------------------
    async def recover(self) -> None:
        """Run the start-up repair now (otherwise the first call runs it)."""
        await self._ready()

    async def _recover(self) -> None:
        """Finish or undo an interrupted apply or rollback, then mark plans that were
        running as interrupted. Nothing is left silently half done."""
        for report in await asyncio.to_thread(self._workspace.recover):
            plan = await self._plans.get_plan(report.plan_id)
            if plan is None or report.outcome == "failed":
                logger.error("could not recover the %s of plan %s", report.op, report.plan_id)
                continue
            completed = report.outcome == "completed"
            if report.outcome == "editor":  # whether the editor made it is unknown: try again
                phase = Phase.APPLY if report.op == "apply" else Phase.ROLLBACK
                await self._move(plan, phase, State.FAILED, EDITOR_RESTART_REASON.format(op=report.op),
                                 events.PLAN_ERRORED)
            elif report.op == "apply":
                if completed:
                    await self._plans.put_checkpoint(plan.plan_id, report.checkpoint)
                    await self._move(plan, Phase.APPLY, State.COMPLETED, "the apply was completed after a restart",
                                     events.PLAN_APPLIED, files=report.paths)
                else:
                    await self._move(plan, Phase.APPLY, State.FAILED,
                                     "the apply was interrupted and undone: the workspace is as before",
                                     events.PLAN_ERRORED)
            elif completed:
                await self._move(plan, Phase.ROLLBACK, State.COMPLETED, "the rollback was completed after a restart",
                                 events.CHECKPOINT_RESTORED, files=report.paths)
            else:
                await self._move(plan, Phase.APPLY, State.COMPLETED,
                                 "the rollback was interrupted and undone: the plan is still applied")
            await asyncio.to_thread(self._workspace.discard, plan.plan_id)
        for plan in await self._plans.plans_in_states([State.RUNNING]):
            if plan.phase is Phase.EXECUTE:
                await self._move(plan, Phase.EXECUTE, State.INTERRUPTED, RESTART_REASON, events.PLAN_ERRORED)
            elif plan.phase is Phase.APPLY:  # no journal: no file was touched
                await self._move(plan, Phase.APPLY, State.FAILED, RESTART_REASON + " (no file was changed)",
                                 events.PLAN_ERRORED)
            else:
                await self._move(plan, Phase.APPLY, State.COMPLETED, RESTART_REASON + " (nothing was restored)")

    # -- creating and reading ------------------------------------------------------
    async def use(self, action_name: str, arguments: dict[str, Any] | None = None,
                  automation_profile: str | None = None, session_id: str | None = None) -> Plan:
        await self._ready()
        if session_id is not None and await self._sessions.get_session(session_id) is None:
            raise ResourceNotFoundError("Session not found", {"session_id": session_id})
        # Reads the action files when they changed, and checks every step's arguments: off the loop.
        resolved = await asyncio.to_thread(self._actions.resolve, action_name, arguments or {})
        profile = Profile(automation_profile or self.default_profile)
        now = utc_now()
        plan = Plan(
            new_id(), resolved.action.name, resolved.bound, profile,
            tuple(Step(s.id, s.tool, dict(s.arguments), s.rationale) for s in resolved.steps), now, now,
            Phase.PLAN, State.INPUT_REQUIRED if profile.gate_before_execute else State.READY, session_id,
            "approve the plan to execute it" if profile.gate_before_execute else None,
        )
        await self._plans.add_plan(plan)
        self._publish(plan, events.PLAN_CREATED, automation_profile=profile.value)
        return plan

    async def status(self, plan_id: str) -> Plan:
        return await self._require(plan_id)

    async def get(self, plan_id: str) -> Plan:
        return await self._require(plan_id)

    async def list(self, session_id: str | None = None, limit: int = 100, cursor: str | None = None) -> PlanPage:
        await self._ready()
        rows = await self._plans.list_plans(session_id=session_id, limit=limit + 1, before=parse_cursor(cursor))
        plans, next_cursor = page(rows, limit)
        return PlanPage(tuple(plans), next_cursor, await self._plans.count_plans(session_id=session_id))

    async def tree(self, plan_id: str) -> PlanTree:
        plan = await self._require(plan_id)
        return PlanTree(plan, tuple(await self._plans.list_decisions(plan_id)))

    async def explain(self, plan_id: str, decision_id: str) -> DecisionExplained:
        plan = await self._require(plan_id)
        decision = await self._plans.get_decision(plan_id, decision_id)
        if decision is None:
            raise ResourceNotFoundError("Decision not found", {"plan_id": plan_id, "decision_id": decision_id})
        step_index = next((i for i, s in enumerate(plan.steps) if s.id == decision.step_id), None)
        return DecisionExplained(plan, decision, step_index)

    async def diff(self, plan_id: str, context: CallContext | None = None) -> PlanDiff:
        """Against the workspace now; where the caller's editor reads files
        (``context.reader``), against its buffers."""
        plan = await self._require(plan_id)
        records = await self._plans.load_overlay(plan_id)
        checkpoint = await self._plans.get_checkpoint(plan_id) if plan.phase in (Phase.APPLY, Phase.ROLLBACK) else None
        reader = reader_of(context)
        current = None if reader is None or checkpoint is not None else await editor_texts(
            reader, self._workspace.root, [record.path for record in records])

        def compute() -> dict[str, Any]:
            return self._workspace.diff(self._workspace.overlay(records), checkpoint, current)

        return PlanDiff(plan, await asyncio.to_thread(compute))

    async def artifacts(self, plan_id: str) -> PlanArtifacts:
        await self._require(plan_id)
        out = []
        for artifact in await self._plans.list_plan_artifacts(plan_id):
            text = None
            if artifact.media_type.startswith("text/") and artifact.size <= TEXT_ARTIFACT_LIMIT:
                data = await asyncio.to_thread(self._workspace.get_blob, artifact.blob)
                text = data.decode("utf-8", "replace")
            out.append(ArtifactShown(artifact, text))
        return PlanArtifacts(plan_id, tuple(out))

    # -- steering ------------------------------------------------------------------
    async def prompt(self, plan_id: str, guidance: str) -> Plan:
        async with self._lock(plan_id):
            plan = await self._require(plan_id)
            plan.require(rules.PROMPT)
            plan = plan.with_guidance(guidance)
            if (execution := self._running.get(plan_id)) is not None:
                execution.plan = plan
            await self._plans.save_plan(plan)
        return plan

    async def cancel(self, plan_id: str) -> PlanMoved:
        async with self._lock(plan_id):
            plan = await self._require(plan_id)
            plan.require(rules.CANCEL)
            if (execution := self._running.get(plan_id)) is not None:
                execution.cancel()
                return PlanMoved(plan.moved(plan.phase, State.CANCELLED, plan.updated_at), cancelling=True)
            plan = await self._move(plan, plan.phase, State.CANCELLED, "cancelled", events.PLAN_CANCELLED)
        return PlanMoved(plan)

    # -- executing -----------------------------------------------------------------
    async def execute(self, plan_id: str, wait: bool = True, context: CallContext | None = None) -> PlanMoved:
        """Run the plan's steps. A plan that failed or was interrupted goes on from the
        step that did not finish: the steps that succeeded are not run again."""
        async with self._lock(plan_id):
            plan = await self._require(plan_id)
            plan.require(rules.EXECUTE)
            start, parent_id, records, made = 0, None, None, 0
            if plan.phase is not Phase.PLAN:
                decisions = await self._plans.list_decisions(plan_id)
                made = sum(d.kind == "step" for d in decisions)
                active = [d for d in decisions if d.outcome != "superseded"]
                done = [d for d in active if d.outcome == "succeeded" and d.kind == "step"]
                start, parent_id = len(done), (done[-1].decision_id if done else None)
                records = await self._plans.load_overlay(plan_id)
                # An unfinished step goes, with the tool calls an actor made inside it.
                gone = {d.decision_id for d in active if d.kind == "step" and d.outcome != "succeeded"}
                unfinished = [replace(d, outcome="superseded") for d in active
                              if d.decision_id in gone or d.parent_id in gone and d.kind != "step"]
                if unfinished:
                    await self._plans.save_plan_state(plan, unfinished, None)
            execution = await self._launch(plan, start, records, parent_id, context, made)
        return await self._finish_launch(execution, wait)

    async def correct(self, plan_id: str, decision_id: str | None = None, guidance: str | None = None,
                      arguments: dict[str, Any] | None = None, wait: bool = True,
                      context: CallContext | None = None) -> PlanMoved:
        """Re-run from a decision with new arguments and/or guidance; the decisions
        from there on are kept, marked superseded, and the new ones branch off."""
        async with self._lock(plan_id):
            plan = await self._require(plan_id)
            plan.require(rules.CORRECT)
            made = await self._plans.list_decisions(plan_id)
            decisions = [d for d in made if d.outcome != "superseded"]
            steps_made = [d for d in decisions if d.kind == "step"]
            target = next((d for d in decisions if d.decision_id == decision_id), None) if decision_id else (
                steps_made[-1] if steps_made else None)
            if target is not None and target.kind != "step":  # a tool call inside a step: redo the step
                target = next((d for d in steps_made if d.decision_id == target.parent_id), None)
            if target is None:
                raise ResourceNotFoundError("Decision not found", {"plan_id": plan_id, "decision_id": decision_id})
            index = next(i for i, s in enumerate(plan.steps) if s.id == target.step_id)
            steps = list(plan.steps)
            if arguments is not None:
                steps[index] = replace(steps[index], arguments={**steps[index].arguments, **arguments})
            metadata = dict(plan.metadata)
            if guidance is not None:
                step_guidance = {k: list(v) for k, v in metadata.get("step_guidance", {}).items()}
                step_guidance.setdefault(target.step_id, []).append(guidance)
                metadata["step_guidance"] = step_guidance
            plan = replace(plan, steps=tuple(steps), metadata=metadata)
            later = decisions[decisions.index(target):]
            await self._plans.save_plan_state(
                plan, [replace(d, outcome="superseded") for d in later], None)
            execution = await self._launch(plan, index, list(target.overlay_before), target.parent_id, context,
                                           sum(d.kind == "step" for d in made), corrected=target.decision_id)
        return await self._finish_launch(execution, wait)

    async def _launch(self, plan: Plan, start: int, records: OverlayRecords | None, parent_id: str | None,
                      context: CallContext | None, steps_used: int, corrected: str | None = None) -> Execution:
        """Start the execution (under the plan's lock); the caller waits for it after
        releasing the lock, so cancel and prompt reach a running plan."""
        execution = Execution(plan, caller=context.caller if context is not None else None)
        self._running[plan.plan_id] = execution
        try:
            plan = await self._move(plan, Phase.EXECUTE, State.RUNNING, None, corrected_from=corrected)
            reader = reader_of(context)
            through = None if reader is None else read_through(reader, self._workspace.root,
                                                               asyncio.get_running_loop())
            overlay = await asyncio.to_thread(self._workspace.overlay, records, through)
        except BaseException:
            self._running.pop(plan.plan_id, None)
            raise
        progress = Progress(context, f"Executing plan {plan.action_name}")
        execution.task = asyncio.ensure_future(
            self._execute(execution, start, overlay, parent_id, progress, steps_used))
        return execution

    async def _finish_launch(self, execution: Execution, wait: bool) -> PlanMoved:
        assert execution.task is not None
        if not wait:
            execution.task.add_done_callback(_log_failure)
            return PlanMoved(execution.plan, running=True)
        try:
            return await asyncio.shield(execution.task)
        except asyncio.CancelledError:
            # The caller went away (or cancelled its progress): so does the execution.
            execution.cancel()
            await asyncio.wait([execution.task])
            raise

    async def _execute(self, execution: Execution, start: int, overlay: PlanOverlay, parent_id: str | None,
                       progress: Progress, steps_used: int) -> PlanMoved:
        plan_id = execution.plan.plan_id
        progress.begin(f"{len(execution.plan.steps) - start} step(s)", len(execution.plan.steps))
        try:
            await self._runner.run(execution, start, overlay, parent_id, progress, steps_used)
        except StepFailed as failure:
            plan = await self._move(execution.plan, Phase.EXECUTE, State.FAILED, failure.error.message,
                                    events.PLAN_ERRORED, decision_id=failure.decision.decision_id)
            progress.end(f"failed: {failure.error.message}")
            raise failure.error from None
        except asyncio.CancelledError:
            if self._stopping:  # nobody cancelled it: it goes on at the next `execute`, as after a crash
                plan = await self._move(execution.plan, Phase.EXECUTE, State.INTERRUPTED, RESTART_REASON,
                                        events.PLAN_ERRORED)
                progress.end("interrupted: the server is stopping")
                return PlanMoved(plan)
            plan = await self._move(execution.plan, Phase.EXECUTE, State.CANCELLED, "cancelled", events.PLAN_CANCELLED)
            progress.end("cancelled")
            return PlanMoved(plan)
        finally:
            self._running.pop(plan_id, None)
        plan = execution.plan
        if plan.profile.gate_before_apply:
            plan = await self._move(plan, Phase.EXECUTE, State.INPUT_REQUIRED, "review the diff and approve the apply")
        else:
            plan = await self._move(plan, Phase.EXECUTE, State.COMPLETED)
        progress.end("done")
        return PlanMoved(plan)

    # -- applying ------------------------------------------------------------------
    async def apply(self, plan_id: str, force: bool = False, context: CallContext | None = None) -> PlanWritten:
        # Once begun, an apply runs to its end and is recorded, even if the caller goes away.
        return await asyncio.shield(asyncio.ensure_future(self._apply(plan_id, force, context)))

    async def rollback(self, plan_id: str, force: bool = False, context: CallContext | None = None) -> PlanWritten:
        return await asyncio.shield(asyncio.ensure_future(self._rollback(plan_id, force, context)))

    async def _apply(self, plan_id: str, force: bool, context: CallContext | None) -> PlanWritten:
        async with self._lock(plan_id):
            plan = await self._require(plan_id)
            plan.require(rules.APPLY)
            records = await self._plans.load_overlay(plan_id)
            progress = Progress(context, f"Applying plan {plan.action_name}")
            progress.begin(f"{len(records)} file(s)")
            before = plan
            plan = await self._move(plan, Phase.APPLY, State.RUNNING)
            editor = context.editor if context is not None else None
            reader = reader_of(context)
            current = None if reader is None else await editor_texts(
                reader, self._workspace.root, [record.path for record in records])
            try:
                checkpoint, written_by = await self._write_files(plan, before, "apply", lambda: apply_files(
                    self._workspace, plan_id, records, force, editor, f"Apply plan {plan.action_name}", current))
            finally:
                progress.end()
            await self._plans.put_checkpoint(plan_id, checkpoint)
            files = checkpoint.paths
            plan = await self._move(plan, Phase.APPLY, State.COMPLETED, None, events.PLAN_APPLIED, files=files,
                                    written_by=written_by)
            await asyncio.to_thread(self._workspace.discard, plan_id)
        return PlanWritten(plan, tuple(files), written_by)

    async def _rollback(self, plan_id: str, force: bool, context: CallContext | None) -> PlanWritten:
        async with self._lock(plan_id):
            plan = await self._require(plan_id)
            plan.require(rules.ROLLBACK)
            checkpoint = await self._plans.get_checkpoint(plan_id)
            if checkpoint is None:
                raise PlanError("The plan has no checkpoint to restore", {"plan_id": plan_id})
            before = plan
            plan = await self._move(plan, Phase.ROLLBACK, State.RUNNING)
            editor = context.editor if context is not None else None
            files, written_by = await self._write_files(plan, before, "rollback", lambda: rollback_files(
                self._workspace, checkpoint, force, editor, f"Roll back plan {plan.action_name}"))
            plan = await self._move(plan, Phase.ROLLBACK, State.COMPLETED, None, events.CHECKPOINT_RESTORED,
                                    files=files, written_by=written_by)
            await asyncio.to_thread(self._workspace.discard, plan_id)
        return PlanWritten(plan, tuple(files), written_by)

    async def _write_files(self, plan: Plan, before: Plan, op: str, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run an apply or rollback (``plan_edits``). A refusal over conflicts wrote
        nothing: the plan goes back to where it was (so `force` can follow). Any other
        failure leaves the plan failed in that phase, with the reason; the journal has
        undone what it could, and the next start finishes the rest."""
        phase = Phase.APPLY if op == "apply" else Phase.ROLLBACK
        try:
            return await work()
        except StructuredError as exc:
            if "conflicts" in exc.data:
                await self._move(plan, before.phase, before.state, exc.message, events.PLAN_ERRORED, **exc.data)
            else:
                await self._move(plan, phase, State.FAILED, exc.message, events.PLAN_ERRORED)
            raise
        except OSError as exc:
            reason = f"the {op} failed: {exc.strerror or type(exc).__name__}"
            await self._move(plan, phase, State.FAILED, reason, events.PLAN_ERRORED)
            raise PlanError(f"The {op} failed", {"plan_id": plan.plan_id,
                                                 "error": exc.strerror or type(exc).__name__}) from None
        except Exception:
            await self._move(plan, phase, State.FAILED, f"the {op} failed (an internal error)", events.PLAN_ERRORED)
            raise

    def stopping(self) -> None:
        """The server is stopping: the executions it cancels from now on (with their
        requests, or in ``aclose``) become ``execute/interrupted``, not cancelled."""
        self._stopping = True

    async def aclose(self) -> None:
        self.stopping()
        for execution in list(self._running.values()):
            execution.cancel()
        tasks = [e.task for e in self._running.values() if e.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=5)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.info("plan execution stopped: %s", exc)
