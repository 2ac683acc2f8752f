"""Domain events and the in-process EventBus that carries them.

Services publish; the protocol boundary's EventBusBridge turns them into A2A events.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

PLAN_CREATED = "PLAN_CREATED"
PLAN_PHASE_CHANGED = "PLAN_PHASE_CHANGED"
PLAN_STATE_CHANGED = "PLAN_STATE_CHANGED"
PLAN_APPLIED = "PLAN_APPLIED"
PLAN_CANCELLED = "PLAN_CANCELLED"
PLAN_ERRORED = "PLAN_ERRORED"
CHECKPOINT_RESTORED = "CHECKPOINT_RESTORED"
PLAN_ARTIFACT_CREATED = "PLAN_ARTIFACT_CREATED"
SESSION_CREATED = "SESSION_CREATED"
SESSION_CLOSED = "SESSION_CLOSED"

PLAN_STATUS_EVENTS = frozenset(
    {PLAN_CREATED, PLAN_PHASE_CHANGED, PLAN_STATE_CHANGED, PLAN_APPLIED, PLAN_CANCELLED, PLAN_ERRORED}
)
PLAN_ARTIFACT_EVENTS = frozenset({CHECKPOINT_RESTORED, PLAN_ARTIFACT_CREATED})
SESSION_EVENTS = frozenset({SESSION_CREATED, SESSION_CLOSED})


@dataclass(frozen=True, slots=True)
class DomainEvent:
    name: str
    plan_id: str | None = None
    session_id: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


Handler = Callable[[DomainEvent], None]


class EventBus:
    """Synchronous, thread-safe publish/subscribe. A failing handler is logged and
    never reaches the publisher."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: dict[int, tuple[frozenset[str] | None, Handler]] = {}
        self._tokens = itertools.count(1)

    def subscribe(self, handler: Handler, names: frozenset[str] | set[str] | None = None) -> int:
        """Call ``handler`` for events named in ``names`` (every event when ``None``)."""
        token = next(self._tokens)
        with self._lock:
            self._handlers[token] = (frozenset(names) if names is not None else None, handler)
        return token

    def unsubscribe(self, token: int) -> bool:
        with self._lock:
            return self._handlers.pop(token, None) is not None

    def publish(self, event: DomainEvent) -> None:
        with self._lock:
            handlers = [h for names, h in self._handlers.values() if names is None or event.name in names]
        for handler in handlers:
            try:
                handler(event)
            except Exception:
                logger.exception("event handler failed for %s", event.name)
