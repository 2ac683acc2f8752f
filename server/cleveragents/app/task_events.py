"""Numbered stream items, so a subscriber that lost its connection resumes where it was.

Every item a task's stream carries gets a position, and its event id is
``{task_id}.{position}`` (the SSE ``id:``, the ``eventId`` of a stdio notification).
A task that anyone has streamed keeps its last ``EVENT_LOG_SIZE`` items in a
``TaskEventLog``; ``SubscribeToTask`` with the last id a client saw replays what came
after it, or starts from the current task when the log no longer reaches back that far.

Positions come from one counter that starts at the clock (microseconds), so an id
from before a restart is older than anything a new log holds: it reads as a gap, never
as a position in the new log.
"""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict, deque
from typing import Any, NamedTuple

from cleveragents.domain.task import StreamItem

EVENT_LOG_SIZE = 128  # items kept per task
RECENT_LOGS = 128  # logs kept of tasks that stopped running (finished or waiting for input)

_positions = itertools.count(time.time_ns() // 1_000)


class StreamEvent(NamedTuple):
    event_id: str
    item: StreamItem


class TaskEventLog:
    def __init__(self, task_id: str):
        self.task_id = task_id
        self._start = next(_positions)  # the position of the state before the first item kept
        self.last = self._start
        self._items: deque[tuple[int, StreamItem]] = deque(maxlen=EVENT_LOG_SIZE)

    def event_id(self, position: int) -> str:
        return f"{self.task_id}.{position}"

    def append(self, item: StreamItem) -> StreamEvent:
        if len(self._items) == self._items.maxlen:
            self._start = self._items[0][0]  # the oldest item falls out: resuming needs a later id
        self.last = next(_positions)
        self._items.append((self.last, item))
        return StreamEvent(self.event_id(self.last), item)

    def snapshot(self, item: StreamItem) -> StreamEvent:
        """``item`` (the whole task) as the state at the latest position."""
        return StreamEvent(self.event_id(self.last), item)

    def after(self, event_id: str | None) -> list[StreamEvent] | None:
        """The items after ``event_id``; ``None`` if this log can't tell (no id, another
        task's id, or one older than what is kept)."""
        position = self._position(event_id)
        if position is None or not self._start <= position <= self.last:
            return None
        return [StreamEvent(self.event_id(p), item) for p, item in self._items if p > position]

    def _position(self, event_id: str | None) -> int | None:
        task_id, _, position = (event_id or "").rpartition(".")
        if task_id != self.task_id or not position.isdigit():
            return None
        return int(position)


class RecentLogs:
    """The logs of tasks no run holds now, newest kept, so a client that missed the end
    of a stream (or a task waiting for input) can still resume it."""

    def __init__(self, limit: int = RECENT_LOGS):
        self._logs: OrderedDict[str, TaskEventLog] = OrderedDict()
        self._limit = limit

    def keep(self, log: TaskEventLog) -> None:
        self._logs[log.task_id] = log
        self._logs.move_to_end(log.task_id)
        while len(self._logs) > self._limit:
            self._logs.popitem(last=False)

    def get(self, task_id: str) -> TaskEventLog | None:
        return self._logs.get(task_id)

    def take(self, task_id: str) -> TaskEventLog | None:
        return self._logs.pop(task_id, None)

    def open(self, task_id: str) -> TaskEventLog:
        """The task's kept log, or a new one (kept from now on)."""
        log = self._logs.get(task_id)
        if log is None:
            log = TaskEventLog(task_id)
            self.keep(log)
        return log


def replay(log: TaskEventLog, last_event_id: str | None, current: Any) -> list[StreamEvent]:
    """What a subscriber gets first: the items it missed, else the current task (also
    when it missed nothing, so that every stream starts at once)."""
    missed = log.after(last_event_id) if last_event_id else None
    return missed or [log.snapshot(current)]
