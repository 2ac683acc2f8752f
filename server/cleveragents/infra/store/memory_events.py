"""Task event logs in process memory (``app.ports.TaskEventLogs``), for both the
in-memory and the SQLite store.

They stay in memory even beside the SQLite file: its state directory belongs to one
process, a stream's subscribers are that process's connections, and a restart fails
every task that was running, while ids from before it read as a gap anyway (they are
older than any new log). Writing each streamed item to disk would add a write per chunk
(the chunks themselves are not stored, ``TaskService._update``) that nothing could use.
An engine shared by several processes keeps them where all of them can read them.

A log keeps a task's last ``EVENT_LOG_SIZE`` items, and about ``EVENT_LOG_BYTES`` of
their content; the logs of the ``RECENT_LOGS`` tasks that stopped running most recently
are kept, the logs that runs hold are not counted.
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


class MemoryEventLog:
    """One task's numbered items, the newest kept within the bounds."""

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

    def after(self, event_id: str | None) -> list[StreamEvent] | None:
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


class MemoryEventLogs:
    """The logs of tasks no run holds now, newest kept; a run's own log is the run's
    until it is kept here."""

    def __init__(self, limit: int = RECENT_LOGS):
        self._kept: OrderedDict[str, MemoryEventLog] = OrderedDict()
        self._limit = limit

    def new_event_log(self, task_id: str) -> MemoryEventLog:
        return MemoryEventLog(task_id)

    def keep_event_log(self, log: Any) -> None:
        # One of ours (the app types it as the port's TaskEventLog, which this can't import).
        self._kept[log.task_id] = log
        self._kept.move_to_end(log.task_id)
        while len(self._kept) > self._limit:
            self._kept.popitem(last=False)

    def kept_event_log(self, task_id: str) -> MemoryEventLog | None:
        return self._kept.get(task_id)

    def take_event_log(self, task_id: str) -> MemoryEventLog | None:
        return self._kept.pop(task_id, None)

    def open_event_log(self, task_id: str) -> MemoryEventLog:
        log = self._kept.get(task_id)
        if log is None:
            log = MemoryEventLog(task_id)
            self.keep_event_log(log)
        return log
