"""Who listens to a task's stream, and what a subscriber that reconnects has missed.

A running task's listeners are on its ``TaskRun``. A task waiting for input has no run:
its subscribers wait here (``watch``) and join the run that resumes it (``join``). The
numbered items of tasks no run holds are kept in the store's ``TaskEventLogs``, so a
subscriber can resume after the last event it saw, even once the task has finished.

TaskService decides when each of these happens; this module only keeps the queues.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from cleveragents.app.ports import TaskEventLogs
from cleveragents.app.task_events import replay
from cleveragents.app.task_runs import END, LISTENER_BUFFER, TaskRun
from cleveragents.domain.errors import BusinessRuleViolation
from cleveragents.domain.task import StreamEvent, Task, TaskStatusUpdate

MAX_WATCHERS = 64  # subscribers of one task that waits for input


class TaskSubscribers:
    def __init__(self, live: dict[str, TaskRun], logs: TaskEventLogs):
        self._live = live  # TaskService's runs, by task id
        self._watchers: dict[str, set[asyncio.Queue[Any]]] = {}
        self._logs = logs

    async def follow(self, run: TaskRun, queue: asyncio.Queue[Any]) -> AsyncIterator[StreamEvent]:
        """A run's listener ``queue`` as a stream, until the run settles. A reader that
        leaves first (its client went away) leaves the run as it is: a task's life is
        its own, not its stream's, and the client may subscribe to it again."""
        try:
            while (event := await queue.get()) is not END:
                yield event
        finally:
            run.listeners.discard(queue)

    def watch(self, task: Task, last_event_id: str | None) -> AsyncIterator[StreamEvent]:
        """A task no run holds: what the subscriber missed (or the task), then, for a
        task waiting for input, the run that resumes it."""
        queue: asyncio.Queue[Any] = asyncio.Queue(LISTENER_BUFFER)
        for event in replay(self._logs.open_event_log(task.id), last_event_id, task):
            queue.put_nowait(event)
        if task.terminal:
            queue.put_nowait(END)
        else:
            watchers = self._watchers.setdefault(task.id, set())
            if len(watchers) >= MAX_WATCHERS:
                raise BusinessRuleViolation("Too many subscribers for this task",
                                            {"task_id": task.id, "limit": MAX_WATCHERS})
            watchers.add(queue)
        return self._watch(task.id, queue)

    async def _watch(self, task_id: str, queue: asyncio.Queue[Any]) -> AsyncIterator[StreamEvent]:
        try:
            while (event := await queue.get()) is not END:
                yield event
        finally:
            if (watchers := self._watchers.get(task_id)) is not None:
                watchers.discard(queue)
                if not watchers:
                    del self._watchers[task_id]
            if (run := self._live.get(task_id)) is not None:
                run.listeners.discard(queue)

    def join(self, run: TaskRun) -> None:
        """A run that resumes a waiting task takes over its numbering and its subscribers."""
        run.log = self._logs.take_event_log(run.task.id)
        run.listeners |= self._watchers.pop(run.task.id, set())

    def ended_without_run(self, task: Task) -> None:
        """A waiting task ended with no run (cancelled): its subscribers hear it and stop."""
        watchers = self._watchers.pop(task.id, set())
        if watchers or self._logs.kept_event_log(task.id) is not None:
            final = TaskStatusUpdate(task.id, task.context_id, task.status, final=True)
            event = self._logs.open_event_log(task.id).append(final)
            for queue in watchers:
                queue.put_nowait(event)
                queue.put_nowait(END)

    def retire(self, run: TaskRun) -> None:
        """The run is over: its listeners get END, and its numbered items are kept for
        a subscriber that missed the end."""
        run.settle()
        if run.log is not None:
            self._logs.keep_event_log(run.log)
