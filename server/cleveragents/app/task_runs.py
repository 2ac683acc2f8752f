"""A task being worked on: its current snapshot, the asyncio task working on it, and the
listeners of its stream (bounded queues, so a reader that stopped can't grow memory).

Listeners receive ``StreamEvent``s: each item with its event id, from the run's
``TaskEventLog`` (from the store's ``TaskEventLogs``), which exists once anyone listens
(a blocking send numbers nothing)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from cleveragents.app.ports import TaskEventLog, TaskEventLogs
from cleveragents.app.task_events import replay
from cleveragents.domain.actor import Usage
from cleveragents.domain.errors import BudgetExceededError
from cleveragents.domain.task import Message, Part, PushConfig, Role, StreamEvent, Task
from cleveragents.ids import new_id

LISTENER_BUFFER = 4096
END = object()  # the last thing a listener receives


class WriteFailed(Exception):
    """The store refused a task's write (``cause``) while its actor ran."""

    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


class TaskRun:
    """Changed only by TaskService, under ``lock``."""

    def __init__(self, task: Task, logs: TaskEventLogs):
        self.task = task
        self._logs = logs
        self.log: TaskEventLog | None = None
        self.lock = asyncio.Lock()
        self.listeners: set[asyncio.Queue[Any]] = set()
        self.runner: asyncio.Task[None] | None = None  # the asyncio task working on it
        self.cancel_sent = False  # cancel() has cancelled the runner
        self.settled = asyncio.Event()
        self.push_configs: list[PushConfig] = []
        # False while the store doesn't hold the task yet (``Unstored``).
        self.stored = True

    @property
    def heard(self) -> bool:
        """Whether an item broadcast now reaches anything: a listener, the log kept for
        subscribers that resume, or a webhook. If not, it need not be built at all."""
        return self.log is not None or bool(self.listeners) or bool(self.push_configs)

    def listen(self, last_event_id: str | None = None) -> asyncio.Queue[Any]:
        """A listener that gets the current task first (or, resuming after
        ``last_event_id``, the items it missed), then every item broadcast."""
        if self.log is None:
            self.log = self._logs.new_event_log(self.task.id)
        queue: asyncio.Queue[Any] = asyncio.Queue(LISTENER_BUFFER)
        for event in replay(self.log, last_event_id, self.task):
            queue.put_nowait(event)
        self.listeners.add(queue)
        return queue

    def broadcast(self, item: Any) -> None:
        if self.log is None:
            if not self.listeners:
                return  # nobody listens, nobody will resume
            self.log = self._logs.new_event_log(self.task.id)
        event: StreamEvent = self.log.append(item)
        for queue in list(self.listeners):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                # A listener this far behind has stopped reading: end its stream.
                self.listeners.discard(queue)
                queue.get_nowait()
                queue.put_nowait(END)

    def settle(self) -> None:
        self.settled.set()
        for queue in list(self.listeners):
            try:
                queue.put_nowait(END)
            except asyncio.QueueFull:
                queue.get_nowait()
                queue.put_nowait(END)
        self.listeners.clear()


async def only(message: Message) -> AsyncIterator[StreamEvent]:
    """A stream of one message: a direct reply, streamed."""
    yield StreamEvent(new_id(), message)


# -- what a run changes on its task -------------------------------------------------
def agent_message(task: Task, text: str) -> Message:
    return Message(new_id(), Role.AGENT, (Part.of_text(text),), task.context_id, task.id)


def add_usage(task: Task, usage: Usage) -> Task:
    metadata = dict(task.metadata or {})
    total = dict(metadata.get("usage") or {})
    total["input_tokens"] = total.get("input_tokens", 0) + usage.input_tokens
    total["output_tokens"] = total.get("output_tokens", 0) + usage.output_tokens
    total["cost"] = total.get("cost", 0.0) + usage.cost
    metadata["usage"] = total
    return replace(task, metadata=metadata)


def with_budget_error(task: Task, exc: BudgetExceededError) -> Task:
    metadata = dict(task.metadata or {})
    metadata["error"] = {"type": "BudgetExceededError", "message": exc.message, "data": exc.data}
    return replace(task, metadata=metadata)


class Unstored:
    """The runs whose task the store doesn't hold yet, oldest first. A blocking send's
    task is written once, when it ends; one still working ``after`` seconds on is
    handed to ``store``. One timer serves them all: a request adds and removes a dict
    entry, not a timer of its own."""

    def __init__(self, store: Callable[[TaskRun], None], after: float):
        self._store = store
        self._after = after
        self._runs: dict[str, tuple[float, TaskRun]] = {}  # in the order they came
        self._timer: asyncio.TimerHandle | None = None

    def add(self, run: TaskRun) -> None:
        loop = asyncio.get_running_loop()
        self._runs[run.task.id] = (loop.time(), run)
        if self._timer is None:
            self._timer = loop.call_at(loop.time() + self._after, self._sweep)

    def discard(self, run: TaskRun) -> None:
        self._runs.pop(run.task.id, None)

    def _sweep(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        while self._runs:
            task_id, (since, run) = next(iter(self._runs.items()))
            if since + self._after > loop.time():
                self._timer = loop.call_at(since + self._after, self._sweep)
                return
            del self._runs[task_id]
            self._store(run)
