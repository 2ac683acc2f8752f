"""Task streams that outlive their replica's memory: each event a run appends is also
written to ``task_events`` and announced with ``NOTIFY``, so that another replica can
resume the stream (``SubscribeToTask`` with ``Last-Event-ID``) while the task runs.

The run's own log stays in memory (``memory_events``): appending must not wait. The
events are queued and written behind, in batches, by one task on the loop; a reader on
another replica reads the table after the id it was given and wakes on each
notification (and once a second, should one be missed). Event ids are the run's ULIDs,
whose text order is their time order, so "after this id" is a range on the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from cleveragents.domain.task import (
    Artifact,
    Message,
    StreamEvent,
    StreamItem,
    Task,
    TaskArtifactUpdate,
    TaskStatus,
    TaskStatusUpdate,
)
from cleveragents.infra.store._pg import Database
from cleveragents.infra.store.memory_events import MemoryEventLog, MemoryEventLogs
from cleveragents.infra.store.postgres_signals import EVENTS_CHANNEL
from cleveragents.infra.store.task_json import dumps

logger = logging.getLogger(__name__)

MAX_QUEUED = 10_000  # events waiting to be written; past it the oldest go (with a warning)
_POLL = 1.0


# -- the items as stored --------------------------------------------------------------
def encode(item: StreamItem) -> str:
    if isinstance(item, Task):
        return dumps({"kind": "task", "task": item.to_dict()})
    if isinstance(item, Message):
        return dumps({"kind": "message", "message": item.to_dict()})
    if isinstance(item, TaskStatusUpdate):
        return dumps({"kind": "status", "task_id": item.task_id, "context_id": item.context_id,
                      "status": item.status.to_dict(), "final": item.final, "metadata": item.metadata})
    return dumps({"kind": "artifact", "task_id": item.task_id, "context_id": item.context_id,
                  "artifact": item.artifact.to_dict(), "append": item.append, "last_chunk": item.last_chunk,
                  "metadata": item.metadata})


def decode(text: str) -> StreamItem:
    d: dict[str, Any] = json.loads(text)
    kind = d["kind"]
    if kind == "task":
        return Task.from_dict(d["task"])
    if kind == "message":
        return Message.from_dict(d["message"])
    if kind == "status":
        return TaskStatusUpdate(d["task_id"], d["context_id"], TaskStatus.from_dict(d["status"]), d["final"],
                                d["metadata"])
    return TaskArtifactUpdate(d["task_id"], d["context_id"], Artifact.from_dict(d["artifact"]), d["append"],
                              d["last_chunk"], d["metadata"])


def ends_stream(item: StreamItem) -> bool:
    return (isinstance(item, TaskStatusUpdate) and item.final) or (isinstance(item, Task) and item.terminal) \
        or isinstance(item, Message)


# -- the writing side -----------------------------------------------------------------
class SharedEventLog(MemoryEventLog):
    def __init__(self, task_id: str, publish: Callable[[str, StreamEvent], None]):
        super().__init__(task_id)
        self._publish = publish

    def append(self, item: StreamItem) -> StreamEvent:
        event = super().append(item)
        self._publish(self.task_id, event)
        return event


class PostgresEventLogs(MemoryEventLogs):
    """The in-memory logs, each event also written behind to ``task_events``."""

    def __init__(self, db: Database):
        super().__init__()
        self._db = db
        self._queued: deque[tuple[str, str, str]] = deque()
        self._writing: asyncio.Task[None] | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}

    def new_event_log(self, task_id: str) -> MemoryEventLog:
        return SharedEventLog(task_id, self._publish)

    def open_event_log(self, task_id: str) -> MemoryEventLog:
        log = self.kept_event_log(task_id)
        if log is None:
            log = SharedEventLog(task_id, self._publish)
            self.keep_event_log(log)
        return log

    def _publish(self, task_id: str, event: StreamEvent) -> None:
        if len(self._queued) >= MAX_QUEUED:
            self._queued.popleft()
            logger.warning("the database is behind: a task event was not written for other replicas")
        self._queued.append((task_id, event.event_id, encode(event.item)))
        if self._writing is None or self._writing.done():
            self._writing = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        while self._queued:
            batch = [self._queued.popleft() for _ in range(min(len(self._queued), 256))]
            try:
                async with self._db.transaction() as conn:
                    async with conn.cursor() as cur:
                        await cur.executemany(
                            "INSERT INTO task_events (task_id, event_id, body) SELECT %s, %s, %s "
                            "WHERE EXISTS (SELECT 1 FROM tasks WHERE task_id = %s) ON CONFLICT DO NOTHING",
                            [(task_id, event_id, body, task_id) for task_id, event_id, body in batch])
                    for task_id in dict.fromkeys(task_id for task_id, _, _ in batch):
                        await conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, task_id))
            except Exception as exc:  # the database away: these events reach only this replica's subscribers
                logger.warning("task events not written for other replicas: %s", exc)

    async def flush(self) -> None:
        """Wait until what is queued is written (closing, tests)."""
        while self._writing is not None and not self._writing.done():
            await asyncio.shield(self._writing)

    # -- the reading side --------------------------------------------------------------
    def notified(self, task_id: str) -> None:
        """A peer wrote events of ``task_id`` (the listener calls this)."""
        for waiter in self._waiters.get(task_id, ()):
            waiter.set()

    async def latest_event_id(self, task_id: str) -> str | None:
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT MAX(event_id) FROM task_events WHERE task_id = %s", (task_id,))
            row = await cur.fetchone()
        return row[0] if row else None

    async def follow(self, task_id: str, after: str | None, running: Callable[[], Any]) -> AsyncIterator[StreamEvent]:
        """The task's events after ``after``, as a peer writes them, until one ends the
        stream or ``running()`` (awaited) says the task stopped with nothing more."""
        wake = asyncio.Event()
        self._waiters.setdefault(task_id, set()).add(wake)
        position = (after or "").upper()
        try:
            while True:
                wake.clear()
                async with self._db.connection() as conn:
                    cur = await conn.execute("SELECT event_id, body FROM task_events WHERE task_id = %s AND "
                                             "event_id > %s ORDER BY event_id", (task_id, position))
                    rows = await cur.fetchall()
                for event_id, body in rows:
                    item = decode(body)
                    position = event_id
                    yield StreamEvent(event_id, item)
                    if ends_stream(item):
                        return
                if not rows and not await running():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), _POLL)
        finally:
            waiters = self._waiters.get(task_id)
            if waiters is not None:
                waiters.discard(wake)
                if not waiters:
                    del self._waiters[task_id]
