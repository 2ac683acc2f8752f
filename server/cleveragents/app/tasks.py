"""TaskService: agent tasks from the first message to a terminal state.

One ``TaskRun`` per task that is being worked on holds the current snapshot, the
asyncio task working on it (a blocking send's own) and the listeners of its stream.
Every change goes through ``_update``, under the run's lock whenever it is stored or
anyone else holds the lock, so a cancel and a late result can't both land: once a
task is terminal, later changes are discarded. Every path that changes a task (start,
resume, cancel, push configs of a live task) is in this one class on purpose: they
share that locking and the ``_live`` registry, which is what keeps the races out.
Who listens to a task, and what a reconnecting subscriber missed, is kept by
``TaskSubscribers`` (task_subscribers.py); what an actor's turn produces becomes
changes through ``_update`` in ``TurnRecorder`` (task_turns.py).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import AsyncIterator, Callable, Collection, Coroutine
from dataclasses import dataclass, replace
from typing import Any

from cleveragents import tracing
from cleveragents.app.calls import CallerTools, FileReader, offered_tools
from cleveragents.app.direct_replies import FirstEvent, PrimedActor, answer_message, replies_directly
from cleveragents.app.editor_reads import turn_reading
from cleveragents.app.once import RunOnce
from cleveragents.app.paging import PAGE_CHARS, budgeted_page, parse_cursor
from cleveragents.app.peer_cancel import RUNNING_STATES, cancel_through_peer, follow_elsewhere
from cleveragents.app.ports import (
    ActorSelector,
    ChosenActor,
    ContextRouter,
    PeerSignals,
    PushConfigRepository,
    PushDispatcher,
    SharedTaskEvents,
    TaskEventLogs,
    TaskRepository,
)
from cleveragents.app.task_runs import TaskRun, Unstored, WriteFailed, agent_message, only
from cleveragents.app.task_subscribers import TaskSubscribers
from cleveragents.app.task_turns import TurnRecorder
from cleveragents.domain.actor import (
    Actor,
    ToolInfo,
    ToolInvoker,
    Turn,
)
from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.errors import (
    BusinessRuleViolation,
    TaskNotFoundError,
    ValidationError,
)
from cleveragents.domain.page_budget import PageBudget
from cleveragents.domain.replies import ReplyAs
from cleveragents.domain.task import (
    INTERRUPTED_STATES,
    Message,
    PushConfig,
    StreamEvent,
    StreamItem,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdate,
)
from cleveragents.ids import new_id, utc_now

logger = logging.getLogger(__name__)

RESTART_REASON = "The server stopped while this task was running."
# A blocking send's task is first written when it ends, or after this long if it is
# still working (ListTasks shows it from then on).
STORE_LATE_SECONDS = 0.05
# Each config is a webhook every event of its task is posted to.
MAX_PUSH_CONFIGS = 32


@dataclass(frozen=True, slots=True)
class TaskPage:
    tasks: list[Task]
    next_page_token: str
    page_size: int
    total_size: int


class TaskService:
    def __init__(self, tasks: TaskRepository, actor: Actor, *, push_configs: PushConfigRepository | None = None,
                 tools: Callable[[], list[ToolInfo]] | None = None,
                 push: PushDispatcher | None = None, router: ContextRouter | None = None,
                 selector: ActorSelector | None = None, invoker: ToolInvoker | None = None,
                 may_repair: Callable[[], bool] | None = None, events: TaskEventLogs | None = None,
                 peers: PeerSignals | None = None, shared_events: SharedTaskEvents | None = None,
                 reply_as: ReplyAs | None = None):
        """``push_configs`` and ``events`` default to ``tasks`` when that keeps them too
        (a whole store). ``reply_as``: how every text reply is delivered, whatever the
        actor's own choice (the endpoint's, ``A2A(reply_as=...)``)."""
        if push_configs is None:
            if not isinstance(tasks, PushConfigRepository):
                raise TypeError("push_configs is needed: the task repository doesn't keep push configs")
            push_configs = tasks
        if events is None:
            if not isinstance(tasks, TaskEventLogs):
                raise TypeError("events is needed: the task repository doesn't keep task event logs")
            events = tasks
        self._tasks = tasks
        self._push_configs = push_configs
        self._events = events
        self.actor = actor
        self._selector = selector
        self._invoker = invoker
        self._tools = tools or (lambda: [])
        self._push = push
        self.router = router
        self._live: dict[str, TaskRun] = {}
        # Processes sharing the store: a cancel one asks for, of a run held here, runs here.
        self._peers = peers
        self._shared_events = shared_events  # the streams of tasks a peer runs
        self._peer_cancels: set[asyncio.Task[None]] = set()
        self._push_config_lock = asyncio.Lock()
        if peers is not None:
            peers.on_cancel(self._cancel_for_peer)
        self._subscribers = TaskSubscribers(self._live, events)
        # Writes off a request's path: putting back a task whose start was cancelled,
        # storing a long blocking send's task (awaited at shutdown).
        self._writing: set[asyncio.Task[None]] = set()
        self._unstored = Unstored(self._store_late, STORE_LATE_SECONDS)
        self._turns = TurnRecorder(self._update, self._emit, lambda: self.actor, reply_as)
        # After a restart, tasks that were running can't resume: fail them, once
        # (if this process owns the state).
        self._ready = RunOnce(self._recover, may_repair)

    # -- start-up ------------------------------------------------------------------
    async def recover(self) -> None:
        """Run the start-up repair now (otherwise the first call runs it)."""
        await self._ready()

    async def _recover(self) -> None:
        await self.fail_interrupted(await self._tasks.live_tasks())

    async def fail_interrupted(self, tasks: builtins.list[Task]) -> None:
        """Fail those of ``tasks`` that were submitted or working in a process that has
        stopped (this one before its restart, or a replica found gone); never one
        that this process runs."""
        for task in tasks:
            if task.state in (TaskState.SUBMITTED, TaskState.WORKING) and task.id not in self._live:
                failed = task.transition(TaskState.FAILED, utc_now(), agent_message(task, RESTART_REASON))
                await self._tasks.save_task(failed)

    # -- sending -------------------------------------------------------------------
    async def send(self, message: Message, *, blocking: bool = True, history_length: int | None = None,
                   push_config: PushConfig | None = None, metadata: dict[str, Any] | None = None,
                   caller: CallerIdentity | None = None) -> Task | Message:
        """Start (or resume) a task. Blocking waits until it is terminal or needs input;
        a caller that goes away cancels the task. ``caller`` (who sent the message)
        is on the actor's turn."""
        run, _, drive = await self._start(message, push_config, metadata, here=blocking, caller=caller)
        if isinstance(run, Message):  # the actor answered with a message: no task
            return run
        if drive is not None:
            # Worked on in the caller's own asyncio task: no second task to start and
            # wait for. What a cancel means there is sorted out in _drive.
            run.runner = asyncio.current_task()
            await drive
        # Without a drive the run is already settled: answered by the router, or
        # cancelled while it was stored.
        return run.task.trimmed(history_length)

    async def stream(self, message: Message, *, push_config: PushConfig | None = None,
                     metadata: dict[str, Any] | None = None,
                     caller: CallerIdentity | None = None,
                     caller_tools: CallerTools | None = None,
                     reader: FileReader | None = None) -> AsyncIterator[StreamEvent]:
        """The task, then its updates until it is terminal or needs input. Closing the
        iterator early (the client went away) leaves the task running, within its own
        limits; ``subscribe`` follows it again, and ``cancel`` stops it. ``reader``: the
        caller's editor, which the turn's tools read files through."""
        with turn_reading(reader):  # the turn's asyncio task starts inside, and keeps it
            run, queue, _ = await self._start(message, push_config, metadata, listen=True, caller=caller,
                                              caller_tools=caller_tools)
        if isinstance(run, Message):  # the actor answered with a message: that is the stream
            return only(run)
        assert queue is not None
        return self._subscribers.follow(run, queue)

    async def subscribe(self, task_id: str, last_event_id: str | None = None) -> AsyncIterator[StreamEvent]:
        """The task, then its updates. A task waiting for input is streamed now and
        followed once a message resumes it. With ``last_event_id`` (the last event a
        client saw) the stream starts with what came after it, when that is still kept,
        and a finished task gives the end of its stream instead of an error."""
        await self._ready()
        task = await self._require(task_id)
        # Looked up again: reading the store may have let a message resume the task.
        if (run := self._live.get(task_id)) is not None and not run.settled.is_set():
            return self._subscribers.follow(run, run.listen(last_event_id))
        if self._shared_events is not None and task.state in RUNNING_STATES:  # a peer runs it
            return follow_elsewhere(self._shared_events, self._tasks, task, last_event_id)
        if task.terminal and last_event_id is None:
            raise BusinessRuleViolation(
                f"Task {task_id} is {task.state.value}; a finished task has no updates to subscribe to",
                {"task_id": task_id, "state": task.state.value},
            )
        return self._subscribers.watch(task, last_event_id)

    async def _start(self, message: Message, push_config: PushConfig | None, metadata: dict[str, Any] | None,
                     listen: bool = False, here: bool = False, caller: CallerIdentity | None = None,
                     caller_tools: CallerTools | None = None,
                     ) -> tuple[TaskRun | Message, asyncio.Queue[Any] | None, Coroutine[Any, Any, None] | None]:
        """Store the new (or resumed) task and start its work: in a task of its own, or
        with ``here``, as the coroutine returned for the caller to await itself. An actor
        that answers with a message alone gives that message, and no task is stored."""
        await self._ready()
        tools, invoker = offered_tools(tuple(self._tools()), self._invoker, caller_tools)
        if not message.parts:
            raise ValidationError.for_field(["message", "parts"], "a message needs at least one part", "too_short")
        if push_config is not None and self._push is not None:
            await self._push.admit(push_config)  # before anything is stored
        if self.router is not None and (claimed := await self.router.claim(message)) is not None:
            run = TaskRun(claimed, self._events)
            queue = run.listen() if listen else None
            run.settle()
            return run, queue, None
        task = await self._resumable(message) if message.task_id or message.context_id else None
        resumed = task is not None
        # The session's actor and budget; a spent budget refuses the message here.
        choice = await self._selector.choose(task.context_id if task else message.context_id) \
            if self._selector is not None else None
        primed: FirstEvent | None = None
        if task is None:
            task_id = new_id()
            context_id = message.context_id or new_id()
            message = message.in_task(task_id, context_id)
            actor = choice.actor if choice is not None else self.actor
            # Its first event says whether there is a task at all, unless the client asked
            # for the task at once (a non-blocking send).
            if replies_directly(actor) and (here or listen):
                primed = await FirstEvent.read(actor, Turn(
                    task_id, context_id, message, (), tools,
                    choice.context if choice is not None else {}, invoker, caller))
                if (reply := primed.reply) is not None:
                    await primed.aclose()
                    return answer_message(reply, context_id), None, None
        now = utc_now()
        if task is None:
            task = Task(task_id, context_id, TaskStatus(TaskState.SUBMITTED, now), (message,), (), metadata)
        else:
            if task.id in self._live:  # another message is resuming it right now
                raise BusinessRuleViolation(f"Task {task.id} is already working on a message",
                                            {"task_id": task.id, "state": TaskState.WORKING.value})
            message = message.in_task(task.id, task.context_id)
            task = task.with_message(message).transition(TaskState.WORKING, now)
        # Registered before the first await, so a cancel or another message sees this run.
        run = TaskRun(task, self._events)
        if resumed:
            self._subscribers.join(run)
        queue = run.listen() if listen else None
        self._live[task.id] = run
        before: Task | None = None  # what the store held, for a resumed task
        try:
            async with run.lock:
                if resumed:
                    # Read again now that this run is registered: a cancel that finished
                    # while we looked the task up must win.
                    fresh = await self._tasks.get_task(task.id)
                    if fresh is None or fresh.state not in INTERRUPTED_STATES:
                        state = fresh.state.value if fresh is not None else "gone"
                        raise BusinessRuleViolation(
                            f"Task {task.id} is {state}; only a task that asks for input takes a new message",
                            {"task_id": task.id, "state": state})
                    before = fresh
                if resumed:
                    await self._tasks.save_task(task)
                elif here and not listen and push_config is None:
                    # Nobody can name the task before the send answers: it is written
                    # once, when it ends, unless it outlasts STORE_LATE_SECONDS.
                    run.stored = False
                else:
                    await self._tasks.add_task(task)
                if push_config is not None:
                    push_config = replace(push_config, task_id=task.id, id=push_config.id or new_id())
                    await self._push_configs.put_push_config(push_config)
                if self._push is not None:
                    # A new task has only the config it came with; a resumed one may have more.
                    run.push_configs = await self._push_configs.list_push_configs(task.id) if resumed else (
                        [push_config] if push_config is not None else [])
        except BaseException as exc:
            if self._live.get(task.id) is run:
                del self._live[task.id]
            self._subscribers.retire(run)
            if isinstance(exc, asyncio.CancelledError):
                # The write may have landed before the cancel reached us: a new task is
                # stored cancelled, a resumed one as it was, never left working unowned.
                self._undo_start(before or task.transition(TaskState.CANCELED, utc_now()))
            raise
        if run.task.terminal:  # cancelled while it was being stored
            return run, queue, None
        if resumed:
            self._emit(run, TaskStatusUpdate(task.id, task.context_id, task.status), listeners=False)
        turn = Turn(task.id, task.context_id, message, task.history[:-1], tools,
                    choice.context if choice is not None else {}, invoker, caller)
        answering = PrimedActor(primed) if primed is not None else None
        if here:
            if not run.stored:
                self._unstored.add(run)
            return run, queue, self._drive(run, turn, choice, here=True, actor=answering)
        run.runner = asyncio.ensure_future(self._drive(run, turn, choice, actor=answering))
        return run, queue, None

    async def _resumable(self, message: Message) -> Task | None:
        """The input-required task this message answers, if it answers one."""
        if message.task_id:
            task = await self._require(message.task_id)
            if task.state in INTERRUPTED_STATES:
                return task
            raise BusinessRuleViolation(
                f"Task {task.id} is {task.state.value}; only a task that asks for input takes a new message",
                {"task_id": task.id, "state": task.state.value},
            )
        if message.context_id:
            return await self._tasks.waiting_task(message.context_id)
        return None

    # -- running -------------------------------------------------------------------
    async def _drive(self, run: TaskRun, turn: Turn, choice: ChosenActor | None = None, here: bool = False,
                     actor: Actor | PrimedActor | None = None) -> None:
        """Work the task to its end. ``here``: in the asyncio task of a blocking send,
        where a CancelledError has two causes. cancel() (CancelTask, shutdown) has
        already recorded the task as canceled, and is taken back, so the send answers
        with the canceled task. Otherwise the caller itself was cancelled (its client
        went away): the task is canceled with it and the error goes on."""
        try:
            if tracing.on():
                await self._turns.traced(run, turn, choice, actor)
            else:
                await self._turns.respond(run, turn, choice, actor)
        except asyncio.CancelledError:
            if here and not (run.cancel_sent and self._take_back_cancel()):
                run.runner = None  # cancel() must not cancel the caller once more
                await asyncio.shield(self._cancel_quietly(run.task.id))
                raise
            # Otherwise cancel() already recorded the canceled state.
        finally:
            self._unstored.discard(run)
            if self._live.get(run.task.id) is run:
                del self._live[run.task.id]
            self._subscribers.retire(run)

    @staticmethod
    def _take_back_cancel() -> bool:
        """Undo cancel()'s request on the current task; False if another one is left."""
        current = asyncio.current_task()
        return current is not None and current.uncancel() == 0

    async def _update(self, run: TaskRun, change: Callable[[Task], Task], broadcast: bool = True,
                      persist: bool = True) -> bool:
        """Change the task; ``persist=False`` keeps the change in memory until the next
        stored one (the working state and streamed chunks: after a crash a running task
        is failed anyway, so storing them would only cost a write each)."""
        if not persist and not run.lock.locked():
            # Nothing is awaited and nobody holds the lock: taking it would change nothing.
            if run.task.terminal:
                return False
            task = run.task = change(run.task)
        else:
            async with run.lock:
                if run.task.terminal:
                    return False  # a late result after a cancel: discarded
                task = change(run.task)
                if persist:
                    try:
                        await self._store(run, task)
                    except Exception as exc:
                        raise WriteFailed(exc) from exc
                run.task = task
        if broadcast and run.heard:
            self._emit(run, TaskStatusUpdate(task.id, task.context_id, task.status, final=False))
        return True

    async def _store(self, run: TaskRun, task: Task) -> None:
        """Write ``task``, the new state of ``run``'s task (under its lock)."""
        if run.stored:
            await self._tasks.save_task(task)
        else:
            await self._tasks.add_task(task)
            run.stored = True

    def _store_late(self, run: TaskRun) -> None:
        """A blocking send's task that is still working is written as it is now, so
        other clients see it (ListTasks) and a restart records it as failed."""
        async def store() -> None:
            async with run.lock:
                if run.stored or run.task.terminal:
                    return
                try:
                    await self._store(run, run.task)
                except Exception:  # its end is written all the same, or fails its send
                    logger.exception("could not store task %s", run.task.id)

        self._in_background(store())

    def _emit(self, run: TaskRun, item: StreamItem, listeners: bool = True) -> None:
        if listeners:
            run.broadcast(item)
        if self._push is not None:
            for config in run.push_configs:
                self._push.deliver(config, item)

    # -- reading and cancelling ----------------------------------------------------
    async def _require(self, task_id: str) -> Task:
        if (run := self._live.get(task_id)) is not None:
            return run.task
        task = await self._tasks.get_task(task_id)
        if task is None:
            raise TaskNotFoundError(f"Task not found: {task_id}", {"task_id": task_id})
        return task

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        await self._ready()
        try:
            task = await self._require(task_id)
        except TaskNotFoundError:
            routed = None if self.router is None else await self.router.task(task_id)
            if routed is None:
                raise
            task = routed
        return task.trimmed(history_length)

    async def list(self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
                   page_size: int = 50, page_token: str | None = None, status_after: str | None = None,
                   history_length: int | None = None, include_artifacts: bool = False) -> TaskPage:
        await self._ready()
        before = parse_cursor(page_token, "pageToken")
        filters: dict[str, Any] = {"context_id": context_id, "states": states, "status_after": status_after}
        budget = PageBudget(PAGE_CHARS)
        rows = await self._tasks.list_tasks(**filters, limit=page_size + 1, before=before, budget=budget)
        tasks, next_token = budgeted_page(rows, page_size, budget)
        return TaskPage(
            [task.trimmed(history_length, include_artifacts) for task in tasks],
            next_token or "", page_size, await self._tasks.count_tasks(**filters),
        )

    async def cancel(self, task_id: str) -> Task:
        await self._ready()
        run = self._live.get(task_id)
        if run is None:
            try:
                task = await self._require(task_id)
            except TaskNotFoundError:
                if self.router is None or (plan_task := await self.router.cancel(task_id)) is None:
                    raise
                return plan_task
            if self._peers is not None and (by_peer := await cancel_through_peer(self._peers, self._tasks, task)):
                return by_peer
            task = task.transition(TaskState.CANCELED, utc_now())
            # Held while the cancel is stored, so a message can't resume the task meanwhile.
            placeholder = self._live.setdefault(task_id, TaskRun(task, self._events))
            if placeholder.task is not task:  # a message is resuming it: cancel that run
                return await self.cancel(task_id)
            try:
                await self._tasks.save_task(task)
            finally:
                if self._live.get(task_id) is placeholder:
                    del self._live[task_id]
                placeholder.settle()
            self._subscribers.ended_without_run(task)
            return task
        async with run.lock:
            task = run.task.transition(TaskState.CANCELED, utc_now())
            await self._store(run, task)
            run.task = task
        self._emit(run, TaskStatusUpdate(task.id, task.context_id, task.status, final=True))
        if run.runner is not None:
            run.cancel_sent = True
            run.runner.cancel()
        self._subscribers.retire(run)
        if self._live.get(task_id) is run:
            del self._live[task_id]
        return task

    def _cancel_for_peer(self, task_id: str) -> None:
        if task_id in self._live:
            cancelling = asyncio.ensure_future(self._cancel_quietly(task_id))
            self._peer_cancels.add(cancelling)
            cancelling.add_done_callback(self._peer_cancels.discard)

    async def _cancel_quietly(self, task_id: str) -> None:
        try:
            await self.cancel(task_id)
        except Exception:  # already terminal: nothing to cancel
            pass

    def _undo_start(self, task: Task) -> None:
        async def store() -> None:
            try:
                await self._tasks.save_task(task)
            except KeyError:
                pass  # the start's write never ran: nothing to put back
            except Exception:
                logger.exception("could not store task %s after its start was cancelled", task.id)

        self._in_background(store())

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        running = asyncio.ensure_future(work)
        self._writing.add(running)
        running.add_done_callback(self._writing.discard)

    async def aclose(self) -> None:
        """Cancel running tasks (shutdown)."""
        for task_id in list(self._live):
            await self._cancel_quietly(task_id)
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)

    # -- push configs --------------------------------------------------------------
    async def set_push_config(self, config: PushConfig) -> PushConfig:
        await self._require(config.task_id)
        if self._push is not None:
            await self._push.admit(config)
        config = replace(config, id=config.id or new_id())
        async with self._push_config_lock:  # the count and the write, one create at a time
            held = {other.id for other in await self._push_configs.list_push_configs(config.task_id)}
            if config.id not in held and len(held) >= MAX_PUSH_CONFIGS:
                raise ValidationError(f"a task holds at most {MAX_PUSH_CONFIGS} push notification configs", {
                    "task_id": config.task_id, "limit": "max_push_configs", "max": MAX_PUSH_CONFIGS})
            await self._push_configs.put_push_config(config)
        if (run := self._live.get(config.task_id)) is not None:
            run.push_configs = [c for c in run.push_configs if c.id != config.id] + [config]
        return config

    async def get_push_config(self, task_id: str, config_id: str | None) -> PushConfig:
        await self._require(task_id)
        if config_id is not None:
            config = await self._push_configs.get_push_config(task_id, config_id)
        else:  # 0.3 may leave the id out: the task's first config
            config = next(iter(await self._push_configs.list_push_configs(task_id)), None)
        if config is not None:
            return config
        raise TaskNotFoundError("Push notification config not found",
                                {"task_id": task_id, "config_id": config_id})

    async def list_push_configs(self, task_id: str) -> builtins.list[PushConfig]:
        await self._require(task_id)
        return await self._push_configs.list_push_configs(task_id)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        await self._require(task_id)
        await self._push_configs.delete_push_config(task_id, config_id)
        if (run := self._live.get(task_id)) is not None:
            run.push_configs = [c for c in run.push_configs if c.id != config_id]
