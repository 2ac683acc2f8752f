"""Running a plan's steps: each step is a tool call in the plan's overlay, recorded as
a decision node.

The runner never writes the workspace: tools get the overlay as their view. A step
that fails (a guard refusal, a bad argument, a tool error) leaves the overlay as it
was before the step, and the plan stops there.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from cleveragents import tracing
from cleveragents.app.plan_ports import PlanRepository, ToolLookup
from cleveragents.app.progress import Progress
from cleveragents.app.step_actor import StepActor
from cleveragents.app.workspace import PlanOverlay, PlanWorkspace
from cleveragents.domain import events
from cleveragents.domain.actor import Budget, ToolCall
from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.errors import BudgetExceededError, PlanError, StructuredError
from cleveragents.domain.plan import Decision, Plan
from cleveragents.domain.plan_files import OverlayRecord, PlanArtifact
from cleveragents.domain.tools import Tool, ToolCancelled, ToolContext, ToolResult
from cleveragents.ids import new_id, utc_now

logger = logging.getLogger(__name__)

MAX_OUTPUT_CHARS = 8_000  # a decision keeps a bounded copy of its tool's output
# Runs a tool call off the event loop within its time limit (infra's ToolRunner.call).
CallTool = Callable[[Tool, dict[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass
class Execution:
    """A plan being executed. ``plan`` is the current version: whoever changes the
    plan meanwhile (``plan/prompt``) changes it here, then stores it, so no write
    overwrites a newer one. ``cancel()`` stops it."""

    plan: Plan
    cancelled: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[Any] | None = None
    caller: CallerIdentity | None = None  # who started it (execute, correct): its steps' actor turns carry it

    def cancel(self) -> None:
        self.cancelled.set()
        if self.task is not None:
            self.task.cancel()


class StepFailed(Exception):
    def __init__(self, decision: Decision, error: StructuredError):
        super().__init__(error.message)
        self.decision = decision
        self.error = error


class PlanRunner:
    def __init__(self, plans: PlanRepository, workspace: PlanWorkspace, tools: ToolLookup, bus: events.EventBus,
                 max_steps: int, call_tool: CallTool, tool_settings: dict[str, Any] | None = None,
                 actor_for: Callable[[Plan], Any] | None = None, plan_budget: Budget | None = None):
        self._plans = plans
        self._call_tool = call_tool
        self._workspace = workspace
        self._tools = tools
        self._bus = bus
        self._max_steps = max_steps
        self._tool_settings = tool_settings or {}
        # The actor a step may ask for edits (an `actor.edit` tool); none by default.
        self._actor_for = actor_for
        self._plan_budget = plan_budget or Budget()

    async def run(self, execution: Execution, start: int, overlay: PlanOverlay, parent_id: str | None,
                  progress: Progress, steps_used: int) -> PlanOverlay:
        """Run the plan's steps from ``start``; ``steps_used`` counts the decisions the
        plan has already made (the step budget covers them all). Returns the overlay.
        Raises ``StepFailed`` (the failed decision is stored) or ``asyncio.CancelledError``."""
        plan = execution.plan
        total = len(plan.steps)
        used = steps_used
        records = await asyncio.to_thread(overlay.to_records)
        for index in range(start, total):
            step = execution.plan.steps[index]
            if used >= self._max_steps:
                error = BudgetExceededError("Step budget exceeded",
                                            {"plan_id": plan.plan_id, "limit": "max_steps", "max": self._max_steps})
                decision = Decision(new_id(), plan.plan_id, step.id, step.tool, step.arguments, parent_id,
                                    step.rationale, "failed", error.message, error=_error_dict(error))
                await self._plans.save_decision(decision)
                raise StepFailed(decision, error)
            used += 1
            # Queued guidance (plan/prompt) goes to this step; a correction's stays with its step.
            plan = execution.plan
            corrections = tuple(plan.metadata.get("step_guidance", {}).get(step.id, ()))
            guidance = corrections + plan.guidance
            execution.plan = replace(plan, guidance=())
            progress.report(f"step {index + 1}/{total}: {step.tool}", index, total)
            progress.step_started(plan.plan_id, index, total, step.id, step.tool)
            attributes = {tracing.PLAN_ID: plan.plan_id, tracing.STEP_ID: step.id, tracing.STEP_INDEX: index,
                          tracing.TOOL: step.tool} if tracing.on() else None
            with tracing.span("plan.step", "internal", attributes) as span:
                try:
                    decision, overlay, calls = await self._step(execution, step, overlay, records, parent_id,
                                                                guidance)
                except StepFailed as failed:
                    tracing.failed(span, failed.error.message, getattr(failed.error, "code", None))
                    progress.step_ended(plan.plan_id, index, total, failed.decision)
                    raise
                span.set_attribute(tracing.OUTCOME, decision.outcome)
            parent_id = decision.decision_id
            records = await asyncio.to_thread(overlay.to_records)
            await self._plans.save_plan_state(execution.plan, [decision, *calls], records)
            progress.report(f"step {index + 1}/{total}: {decision.summary or decision.outcome}", index + 1, total)
            progress.step_ended(plan.plan_id, index, total, decision)
        return overlay

    async def _step(self, execution: Execution, step: Any, overlay: PlanOverlay, before: list[OverlayRecord],
                    parent_id: str | None, guidance: tuple[str, ...]) -> tuple[Decision, PlanOverlay, list[Decision]]:
        """``before`` is the overlay's records now, kept with the decision. Also gives
        the decisions of the tool calls an actor made inside the step."""
        plan = execution.plan
        decision = Decision(
            new_id(), plan.plan_id, step.id, step.tool, step.arguments, parent_id, step.rationale,
            "running", guidance=guidance, started_at=utc_now(), overlay_before=tuple(before),
        )
        started = time.perf_counter()
        actor = await self._step_actor(execution)
        context = ToolContext(view=overlay, workspace=self._workspace.root, cancelled=execution.cancelled,
                              guidance=guidance, settings=self._tool_settings, actor=actor, caller=execution.caller)
        if actor is not None:
            actor.check = context.check_cancelled  # the step's time limit holds while it waits on its actor
        try:
            tool = self._tools.get(step.tool)
            result = await self._call_tool(tool, step.arguments, context)  # run() validates
            output = await asyncio.to_thread(_bounded, result.output)  # a big output is serialized off the loop
        except (Exception, asyncio.CancelledError) as exc:
            # The step's partial writes go (the overlay is as before the step), except
            # when an actor's budget ran out: what it edited so far is kept.
            keep = isinstance(exc, BudgetExceededError) and actor is not None and bool(actor.calls)
            if not keep:
                overlay = await asyncio.to_thread(self._workspace.overlay, before)
            cancelled = isinstance(exc, (ToolCancelled, asyncio.CancelledError))
            error = None if cancelled or not isinstance(exc, Exception) else _as_step_error(exc, plan.plan_id, step.tool)
            decision = replace(
                decision, outcome="cancelled" if cancelled else "failed",
                summary="cancelled" if error is None else error.message,
                error=None if error is None else _error_dict(error),
                ended_at=utc_now(), duration_ms=_ms(started),
            )
            calls = self._actor_calls(execution, decision, actor)
            records = await asyncio.to_thread(overlay.to_records) if keep else before
            await self._plans.save_plan_state(execution.plan, [decision, *calls], records)
            if error is None:
                raise asyncio.CancelledError() from None
            raise StepFailed(decision, error) from None
        for artifact in result.artifacts:
            await self._store_artifact(plan, decision.decision_id, artifact)
        decision = replace(
            decision, outcome="succeeded", summary=result.summary, reads=tuple(result.reads),
            writes=tuple(result.writes), output=output, ended_at=utc_now(),
            duration_ms=_ms(started),
        )
        return decision, overlay, self._actor_calls(execution, decision, actor)

    async def _step_actor(self, execution: Execution) -> StepActor | None:
        if self._actor_for is None:
            return None
        actor = self._actor_for(execution.plan)
        if inspect.isawaitable(actor):
            actor = await actor
        if actor is None:
            return None
        budget = self._plan_budget.tighter(getattr(actor, "budget", None) or Budget())
        return StepActor(actor, asyncio.get_running_loop(), execution.cancelled, budget,
                         StepActor.spent_by(execution.plan.metadata), execution.plan.plan_id)

    def _actor_calls(self, execution: Execution, step: Decision, actor: StepActor | None) -> list[Decision]:
        """The actor's tool calls as child decisions of the step (with its stated
        rationale), and its usage added to the plan's."""
        if actor is None or (not actor.calls and not actor.usage.tokens and not actor.usage.cost):
            return []
        plan = execution.plan
        used = StepActor.spent_by(plan.metadata) + actor.usage
        execution.plan = replace(plan, metadata={**plan.metadata, "usage": used.to_dict()})
        return [_call_decision(step, call) for call in actor.calls]

    async def _store_artifact(self, plan: Plan, decision_id: str, artifact: Any) -> None:
        digest = await asyncio.to_thread(self._workspace.put_blob, artifact.data)
        record = PlanArtifact(new_id(), decision_id, artifact.name, artifact.media_type, digest, len(artifact.data),
                              utc_now())
        await self._plans.add_plan_artifact(plan.plan_id, record)
        self._bus.publish(events.DomainEvent(events.PLAN_ARTIFACT_CREATED, plan.plan_id, plan.session_id, {
            "artifact_id": record.artifact_id, "decision_id": record.decision_id, "name": record.name,
            "media_type": record.media_type, "size": record.size,
            "phase": plan.phase.value, "state": plan.state.value,
        }))


def _call_decision(step: Decision, call: ToolCall) -> Decision:
    result = call.result if isinstance(call.result, dict) else {"result": call.result}
    error = result.get("error") if call.failed else None
    summary = str(error if error is not None else result.get("summary", ""))
    writes = () if call.failed else _written(call.name, call.arguments, result)
    return Decision(
        new_id(), step.plan_id, step.step_id, call.name, dict(call.arguments), step.decision_id, call.rationale,
        "failed" if call.failed else "succeeded", summary, writes=writes, output=_bounded(result),
        error={"type": "ToolRefused", "message": summary, "data": result.get("data", {})} if call.failed else None,
        started_at=step.started_at, ended_at=step.ended_at, kind="tool_call",
    )


def _written(tool: str, arguments: Any, output: dict[str, Any]) -> tuple[str, ...]:
    """The paths a file tool's call wrote: its ``path``, or the ``files`` it lists."""
    if tool == "fs.write":
        return (str(arguments.get("path")),)
    files = output.get("files")
    return tuple(str(f["path"]) for f in files if isinstance(f, dict) and "path" in f) if isinstance(files, list) else ()


def _as_step_error(exc: BaseException, plan_id: str, tool: str) -> StructuredError:
    """A tool's refusal as it is; anything else (a bug, an OS error) as a PlanError that
    names the tool, with the traceback on stderr."""
    if isinstance(exc, StructuredError):
        return exc
    logger.warning("tool %s failed in plan %s", tool, plan_id, exc_info=exc)
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
    return PlanError(f"The tool {tool} failed: {detail}", {"plan_id": plan_id, "tool": tool,
                                                         "error": type(exc).__name__})


def _error_dict(error: StructuredError) -> dict[str, Any]:
    return {"type": type(error).__name__, "message": error.message, "data": error.data}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _bounded(output: dict[str, Any]) -> dict[str, Any]:
    import json

    text = json.dumps(output, default=str)
    if len(text) <= MAX_OUTPUT_CHARS:
        return output
    return {"truncated": True, "size": len(text), "preview": text[:MAX_OUTPUT_CHARS]}
