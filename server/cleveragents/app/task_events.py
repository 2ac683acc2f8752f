"""Stream items with ids, so a subscriber that lost its connection resumes where it was.

Every item a task's stream carries gets an event id, a ULID (the SSE ``id:``, the
``eventId`` of a stdio notification), as the events of an event subscription do. A
task that anyone has streamed keeps its last ``EVENT_LOG_SIZE`` items in a
``TaskEventLog``; ``SubscribeToTask`` with the last id a client saw replays what came
after it, or starts from the current task when the log no longer reaches back that far.

The ids are this process's monotonic ULIDs, so an id is also a moment: one from before
a restart is older than anything a new log holds and reads as a gap, never as a place
in the new log.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from cleveragents.domain.task import StreamEvent, StreamItem, TaskArtifactUpdate
from cleveragents.ids import is_ulid, new_id

EVENT_LOG_SIZE = 128  # items kept per task, at most
EVENT_LOG_BYTES = 256 * 1024  # and about this much of their content (big artifact chunks)
RECENT_LOGS = 128  # logs kept of tasks that stopped running (finished or waiting for input)
ITEM_OVERHEAD = 256  # what an item weighs besides its parts' content, roughly


class TaskEventLog:
    def __init__(self, task_id: str):
        self.task_id = task_id
        self._start = new_id()  # the id of the state before the first item kept
        self.last = self._start
        self._items: deque[tuple[StreamEvent, int]] = deque()  # with each item's weight
        self._weight = 0

    def append(self, item: StreamItem) -> StreamEvent:
        event = StreamEvent(new_id(), item)
        weight = _weight(item)
        self._items.append((event, weight))
        self._weight += weight
        self.last = event.event_id
        while len(self._items) > EVENT_LOG_SIZE or (self._weight > EVENT_LOG_BYTES and len(self._items) > 1):
            dropped, dropped_weight = self._items.popleft()
            self._weight -= dropped_weight
            self._start = dropped.event_id  # resuming now needs a later id
        return event

    def snapshot(self, item: StreamItem) -> StreamEvent:
        """``item`` (the whole task) as the state at the latest id."""
        return StreamEvent(self.last, item)

    def after(self, event_id: str | None) -> list[StreamEvent] | None:
        """The items after ``event_id``; ``None`` if this log can't tell (no id, not a
        ULID, or one older than what is kept)."""
        if not event_id or not is_ulid(event_id):
            return None
        position = event_id.upper()  # ULIDs are case-insensitive; ours are upper case
        if not self._start <= position <= self.last:
            return None
        return [event for event, _ in self._items if event.event_id > position]


def _weight(item: StreamItem) -> int:
    """About how much memory an item's content holds (an artifact chunk can be large)."""
    if not isinstance(item, TaskArtifactUpdate):
        return ITEM_OVERHEAD
    return ITEM_OVERHEAD + sum(len(part.text or "") + len(part.raw or b"") + (ITEM_OVERHEAD if part.has_data else 0)
                               for part in item.artifact.parts)


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
    return log.after(last_event_id) or [log.snapshot(current)]
