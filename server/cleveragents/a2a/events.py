"""A2AEventQueue: in-process pub/sub with a bounded ring buffer and ULID cursors,
and EventBusBridge, which feeds it from the domain EventBus."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from cleveragents.a2a.models import A2AEvent
from cleveragents.domain import events as domain

logger = logging.getLogger(__name__)

TASK_STATUS_UPDATE = "TaskStatusUpdateEvent"
TASK_ARTIFACT_UPDATE = "TaskArtifactUpdateEvent"
SESSION_STATUS_UPDATE = "SessionStatusUpdateEvent"
# Sent to a subscriber that fell so far behind that the buffer dropped events it had
# not read yet; `data.missed` says how many.
EVENT_GAP = "EventGapEvent"

DEFAULT_CAPACITY = 1024

EventCallback = Callable[[A2AEvent], None]


class _Filter:
    __slots__ = ("plan_id", "event_types")

    def __init__(self, plan_id: str | None, event_types: Iterable[str] | None):
        self.plan_id = plan_id
        self.event_types = frozenset(event_types) if event_types else None

    def __call__(self, event: A2AEvent) -> bool:
        if self.plan_id is not None and event.plan_id != self.plan_id:
            return False
        return self.event_types is None or event.event_type in self.event_types


class EventCursor:
    """A position in the queue. Iterating it yields the buffered events after the
    position, then live ones, until it is closed (or the queue is)."""

    def __init__(self, queue: A2AEventQueue, seq: int, match: _Filter, gap: bool):
        self._queue = queue
        self._seq = seq
        self._match = match
        self._wakeup = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self.gap = gap

    def _notify(self) -> None:
        if self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wakeup.set()
        else:
            self._loop.call_soon_threadsafe(self._wakeup.set)

    def pending(self) -> list[A2AEvent]:
        """The matching events after this cursor that are in the buffer now."""
        events, _ = self._queue._read_after(self._seq)
        return [e for _, e in events if self._match(e)]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue._detach(self)
            self._notify()

    @property
    def closed(self) -> bool:
        return self._closed

    def __aiter__(self) -> EventCursor:
        return self

    async def __anext__(self) -> A2AEvent:
        while True:
            self._wakeup.clear()
            if self._closed:
                raise StopAsyncIteration
            batch, missed = self._queue._read_after(self._seq, limit=1)
            if missed:
                self._seq += missed
                return A2AEvent(event_type=EVENT_GAP, data={"missed": missed})
            if batch:
                self._seq, event = batch[0]
                if self._match(event):
                    return event
                continue
            if self._queue.closed:
                self.close()
                raise StopAsyncIteration
            await self._wakeup.wait()


class A2AEventQueue:
    """Bounded pub/sub for plan, task and session events.

    Every event is kept in a ring buffer of ``capacity`` recent events. Its
    ``event_id`` (a ULID) is a cursor: subscribing with ``since=<event_id>`` first
    replays what followed that event and is still buffered, so nothing is lost.
    ``publish`` may be called from any thread.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._buffer: deque[tuple[int, A2AEvent]] = deque()
        self._seq_by_id: dict[str, int] = {}
        self._next_seq = 1
        self._callbacks: dict[str, tuple[_Filter, EventCallback]] = {}
        self._cursors: set[EventCursor] = set()
        self._sub_ids = itertools.count(1)
        self._closed = False

    # -- publishing ----------------------------------------------------------------
    def publish(self, event: A2AEvent) -> A2AEvent:
        with self._lock:
            if self._closed:
                logger.debug("event queue closed; dropped %s", event.event_type)
                return event
            if event.event_id in self._seq_by_id:
                raise ValueError(f"event {event.event_id} was already published")
            if len(self._buffer) >= self.capacity:
                _, old = self._buffer.popleft()
                self._seq_by_id.pop(old.event_id, None)
            seq = self._next_seq
            self._next_seq += 1
            self._buffer.append((seq, event))
            self._seq_by_id[event.event_id] = seq
            callbacks = [cb for match, cb in self._callbacks.values() if match(event)]
            cursors = list(self._cursors)
        for cursor in cursors:
            cursor._notify()
        for callback in callbacks:
            try:
                callback(event)
            except Exception:
                logger.exception("event callback failed for %s", event.event_type)
        return event

    # -- reading -------------------------------------------------------------------
    def get_events(self, limit: int = 50, *, plan_id: str | None = None) -> list[A2AEvent]:
        """The most recent ``limit`` events (oldest first)."""
        if limit <= 0:
            return []
        match = _Filter(plan_id, None)
        with self._lock:
            found = [e for _, e in reversed(self._buffer) if match(e)][:limit]
        found.reverse()
        return found

    def events_since(
        self, since: str | None, *, plan_id: str | None = None,
        event_types: Iterable[str] | None = None, limit: int | None = None,
    ) -> tuple[list[A2AEvent], bool]:
        """Buffered events after ``since`` and whether some may have been dropped."""
        match = _Filter(plan_id, event_types)
        with self._lock:
            seq, gap = self._resolve(since)
            events = [e for s, e in self._buffer if s > seq and match(e)]
        return (events[:limit] if limit is not None else events), gap

    def open_cursor(
        self, since: str | None = None, *, plan_id: str | None = None,
        event_types: Iterable[str] | None = None,
    ) -> EventCursor:
        """A cursor after ``since`` (or after the newest event); call from a coroutine."""
        with self._lock:
            seq, gap = self._resolve(since)
            cursor = EventCursor(self, seq, _Filter(plan_id, event_types), gap)
            if not self._closed:
                self._cursors.add(cursor)
        return cursor

    async def subscribe(
        self, plan_id: str | None = None, *, since: str | None = None,
        event_types: Iterable[str] | None = None,
    ) -> AsyncIterator[A2AEvent]:
        """Iterate over events (for one plan when ``plan_id`` is given) until ``close``."""
        cursor = self.open_cursor(since, plan_id=plan_id, event_types=event_types)
        try:
            async for event in cursor:
                yield event
        finally:
            cursor.close()

    # -- callbacks -----------------------------------------------------------------
    def subscribe_local(
        self, callback: EventCallback, *, plan_id: str | None = None,
        event_types: Iterable[str] | None = None,
    ) -> str:
        """Call ``callback`` for each event published from now on; returns its id."""
        sub_id = f"local-{next(self._sub_ids)}"
        with self._lock:
            self._callbacks[sub_id] = (_Filter(plan_id, event_types), callback)
        return sub_id

    def unsubscribe(self, sub_id: str) -> bool:
        with self._lock:
            return self._callbacks.pop(sub_id, None) is not None

    # -- lifecycle -----------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def last_event_id(self) -> str | None:
        with self._lock:
            return self._buffer[-1][1].event_id if self._buffer else None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._callbacks.clear()
            cursors = list(self._cursors)
        for cursor in cursors:
            cursor._notify()

    # -- internals (called with or without the lock, as noted) ----------------------
    def _resolve(self, since: str | None) -> tuple[int, bool]:
        """Sequence number after which to read; the lock is held."""
        last_seq = self._next_seq - 1
        if since is None:
            return last_seq, False
        if (seq := self._seq_by_id.get(since)) is not None:
            return seq, False
        # An id that is no longer (or never was) buffered: fall back to ULID order.
        if not self._buffer:
            return last_seq, False
        oldest_seq, oldest = self._buffer[0]
        if since < oldest.event_id:
            return oldest_seq - 1, True
        for seq, event in self._buffer:
            if event.event_id > since:
                return seq - 1, False
        return last_seq, False

    def _read_after(self, seq: int, limit: int | None = None) -> tuple[list[tuple[int, A2AEvent]], int]:
        """Buffered events after ``seq``, and how many were dropped before them."""
        with self._lock:
            if not self._buffer:
                return [], max(0, self._next_seq - 1 - seq)
            first_seq = self._buffer[0][0]
            missed = max(0, first_seq - 1 - seq)
            if missed:
                return [], missed
            start = seq + 1 - first_seq
            stop = len(self._buffer) if limit is None else min(len(self._buffer), start + limit)
            return [self._buffer[i] for i in range(start, stop)], 0

    def _detach(self, cursor: EventCursor) -> None:
        with self._lock:
            self._cursors.discard(cursor)


_STATUS_BY_DOMAIN_EVENT = {
    **{name: TASK_STATUS_UPDATE for name in domain.PLAN_STATUS_EVENTS},
    **{name: TASK_ARTIFACT_UPDATE for name in domain.PLAN_ARTIFACT_EVENTS},
    **{name: SESSION_STATUS_UPDATE for name in domain.SESSION_EVENTS},
}


def to_a2a_event(event: domain.DomainEvent) -> A2AEvent | None:
    """The A2A event for a domain event, or ``None`` when it has no A2A meaning."""
    event_type = _STATUS_BY_DOMAIN_EVENT.get(event.name)
    if event_type is None:
        return None
    data: dict[str, Any] = {"domain_event": event.name, **event.data}
    if event.session_id is not None:
        data.setdefault("session_id", event.session_id)
    return A2AEvent(event_type=event_type, plan_id=event.plan_id, data=data)


class EventBusBridge:
    """Translates domain events into A2AEvents on an A2AEventQueue."""

    def __init__(self, event_bus: domain.EventBus, event_queue: A2AEventQueue):
        self.event_bus = event_bus
        self.event_queue = event_queue
        self._token: int | None = None

    def start(self) -> EventBusBridge:
        if self._token is None:
            self._token = self.event_bus.subscribe(self._forward, set(_STATUS_BY_DOMAIN_EVENT))
        return self

    def stop(self) -> None:
        if self._token is not None:
            self.event_bus.unsubscribe(self._token)
            self._token = None

    @property
    def running(self) -> bool:
        return self._token is not None

    def _forward(self, event: domain.DomainEvent) -> None:
        a2a_event = to_a2a_event(event)
        if a2a_event is not None:
            self.event_queue.publish(a2a_event)

# The earlier spelling of the prefix, kept so existing imports keep working.
A2aEventQueue = A2AEventQueue
