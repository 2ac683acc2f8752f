"""Request handlers for `_cleveragents/event/subscribe` and `unsubscribe`.

The facade serves the event queue through this adapter: a subscription needs the
caller's context (a transport that can push events, or none).
"""

from __future__ import annotations

from typing import Any

from cleveragents.a2a.events import A2aEventQueue, EventCursor
from cleveragents.app.calls import CallContext
from cleveragents.domain.errors import BusinessRuleViolation, ResourceNotFoundError
from cleveragents.ids import new_id

MAX_LIVE_SUBSCRIPTIONS = 256


class EventSubscriptions:
    def __init__(self, queue: A2aEventQueue, limit: int = MAX_LIVE_SUBSCRIPTIONS):
        self.queue = queue
        self.limit = limit
        self._live: dict[str, EventCursor] = {}

    async def subscribe(
        self, plan_id: str | None = None, since: str | None = None,
        event_types: list[str] | None = None, context: CallContext | None = None,
    ) -> dict[str, Any]:
        subscription_id = new_id()
        if context is None or context.attach_stream is None:
            # No push channel: answer with what is buffered; poll again from `cursor`.
            events, gap = self.queue.events_since(since, plan_id=plan_id, event_types=event_types)
            position = events[-1].event_id if events else (since or self.queue.last_event_id)
            return {
                "subscription_id": subscription_id, "live": False, "cursor": position,
                "replayed": len(events), "gap": gap, "events": [e.to_wire() for e in events],
            }
        self._forget_closed()
        if len(self._live) >= self.limit:
            raise BusinessRuleViolation(
                "Too many live subscriptions",
                {"limit": self.limit, "allowed_actions": ["_cleveragents/event/unsubscribe"]},
            )
        cursor = self.queue.open_cursor(since, plan_id=plan_id, event_types=event_types)
        replayed = len(cursor.pending())
        self._live[subscription_id] = cursor
        context.attach_stream(subscription_id, cursor)
        return {
            "subscription_id": subscription_id, "live": True,
            "cursor": since or self.queue.last_event_id, "replayed": replayed, "gap": cursor.gap,
        }

    async def unsubscribe(self, subscription_id: str, context: CallContext | None = None) -> dict[str, Any]:
        cursor = self._live.pop(subscription_id, None)
        if cursor is None or cursor.closed:
            raise ResourceNotFoundError("Subscription not found", {"subscription_id": subscription_id})
        cursor.close()
        return {"subscription_id": subscription_id, "status": "closed"}

    def _forget_closed(self) -> None:
        for key in [k for k, c in self._live.items() if c.closed]:
            del self._live[key]

    @property
    def live_count(self) -> int:
        self._forget_closed()
        return len(self._live)
