"""Stream items with ids, so a subscriber that lost its connection resumes where it was.

Every item a task's stream carries gets an event id, a ULID (the SSE ``id:``, the
``eventId`` of a stdio notification), as the events of an event subscription do. A
task that anyone has streamed has a ``TaskEventLog`` (a store port, ``ports.py``) that
keeps its newest items; ``SubscribeToTask`` with the last id a client saw replays what
came after it, or starts from the current task when the log no longer reaches back that
far.

The ids are this process's monotonic ULIDs, so an id is also a moment: one from before
a restart is older than anything a new log holds and reads as a gap, never as a place
in the new log.
"""

from __future__ import annotations

from cleveragents.app.ports import TaskEventLog
from cleveragents.domain.task import StreamEvent, StreamItem


def replay(log: TaskEventLog, last_event_id: str | None, current: StreamItem) -> list[StreamEvent]:
    """What a subscriber gets first: the items it missed, else the current task at the
    log's latest id (also when it missed nothing, so that every stream starts at once)."""
    return log.after(last_event_id) or [StreamEvent(log.last, current)]
