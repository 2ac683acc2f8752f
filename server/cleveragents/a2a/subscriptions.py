"""Request handlers for `_cleveragents/event/subscribe` and `unsubscribe`.

The facade serves the event queue through this adapter: a subscription needs the
caller's context. When the transport can send a live stream after the response
(``CallContext.push``), the answer is ``Followed`` by an ``EventFeed`` of the
subscription's events as ``StreamItem``s; otherwise it holds the buffered events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from cleveragents.a2a.events import TASK_ARTIFACT_UPDATE, TASK_STATUS_UPDATE, A2AEventQueue, EventCursor
from cleveragents.a2a.models import A2AEvent
from cleveragents.a2a.streams import ARTIFACT, EVENT, STATUS, Followed, StreamItem
from cleveragents.app.calls import CallContext
from cleveragents.domain.errors import BusinessRuleViolation, ResourceNotFoundError
from cleveragents.ids import new_id

MAX_LIVE_SUBSCRIPTIONS = 256
# One token subject's share: holding them all would leave every other caller refused.
# Callers with the configured secret have no subject; they are the operator's own.
MAX_LIVE_SUBSCRIPTIONS_PER_CALLER = 64


class EventSubscriptions:
    def __init__(self, queue: A2AEventQueue, limit: int = MAX_LIVE_SUBSCRIPTIONS,
                 per_caller: int = MAX_LIVE_SUBSCRIPTIONS_PER_CALLER):
        self.queue = queue
        self.limit = limit
        self.per_caller = per_caller
        # Each live subscription's cursor, and its holder: the token's issuer and subject, if any.
        self._live: dict[str, tuple[EventCursor, tuple[str | None, str] | None]] = {}

    async def subscribe(
        self, plan_id: str | None = None, since: str | None = None,
        event_types: list[str] | None = None, context: CallContext | None = None,
    ) -> dict[str, Any] | Followed:
        subscription_id = new_id()
        if context is None or not context.push:
            # No push channel: answer with what is buffered; poll again from `cursor`.
            events, gap = self.queue.events_since(since, plan_id=plan_id, event_types=event_types)
            position = events[-1].event_id if events else (since or self.queue.last_event_id)
            return {
                "subscription_id": subscription_id, "live": False, "cursor": position,
                "replayed": len(events), "gap": gap, "events": [e.to_wire() for e in events],
            }
        self._forget_closed()
        caller = context.caller
        holder = caller.holder if caller is not None else None
        if len(self._live) >= self.limit:
            raise _too_many(self.limit, "server")
        if holder is not None and sum(1 for _, held in self._live.values() if held == holder) >= self.per_caller:
            raise _too_many(self.per_caller, "caller")
        cursor = self.queue.open_cursor(since, plan_id=plan_id, event_types=event_types)
        replayed = len(cursor.pending())
        self._live[subscription_id] = (cursor, holder)
        return Followed({
            "subscription_id": subscription_id, "live": True,
            "cursor": since or self.queue.last_event_id, "replayed": replayed, "gap": cursor.gap,
        }, EventFeed(subscription_id, cursor), subscription_id)

    async def unsubscribe(self, subscription_id: str, context: CallContext | None = None) -> dict[str, Any]:
        cursor, _ = self._live.pop(subscription_id, (None, None))
        if cursor is None or cursor.closed:
            raise ResourceNotFoundError("Subscription not found", {"subscription_id": subscription_id})
        cursor.close()
        return {"subscription_id": subscription_id, "status": "closed"}

    def _forget_closed(self) -> None:
        for key in [k for k, (cursor, _) in self._live.items() if cursor.closed]:
            del self._live[key]

    @property
    def live_count(self) -> int:
        self._forget_closed()
        return len(self._live)


def _too_many(limit: int, scope: str) -> BusinessRuleViolation:
    """``scope``: whose bound it is, the server's or the caller's share of it."""
    return BusinessRuleViolation("Too many live subscriptions", {
        "limit": limit, "scope": scope, "allowed_actions": ["_cleveragents/event/unsubscribe"]})


class EventFeed:
    """A live subscription's events as stream items, until its cursor is closed."""

    def __init__(self, subscription_id: str, cursor: EventCursor):
        self.subscription_id = subscription_id
        self.cursor = cursor

    async def __aiter__(self) -> AsyncIterator[StreamItem]:
        try:
            async for event in self.cursor:
                yield event_item(self.subscription_id, event)
        finally:
            self.cursor.close()  # a cancelled reader never leaves its cursor registered

    def close(self) -> None:
        self.cursor.close()

    @property
    def closed(self) -> bool:
        return self.cursor.closed


def event_item(subscription_id: str, event: A2AEvent) -> StreamItem:
    """An event of a subscription, with its task update when it is a task or plan event."""
    payload = event.to_wire()
    payload["subscription_id"] = subscription_id
    return StreamItem(EVENT, payload, event.event_id, event.event_type, task_update(event))


def task_update(event: A2AEvent) -> StreamItem | None:
    """The task update a task or plan event also is (plan events carry the plan's
    ``planId``, ``phase`` and ``state``)."""
    if event.event_type not in (TASK_STATUS_UPDATE, TASK_ARTIFACT_UPDATE):
        return None
    data = event.data
    params: dict[str, Any] = {
        "taskId": data.get("task_id") or event.plan_id,
        "eventId": event.event_id,
        "timestamp": event.timestamp,
    }
    if event.plan_id is not None:
        params.update(planId=event.plan_id, phase=data.get("phase"), state=data.get("state"))
    if event.event_type == TASK_STATUS_UPDATE:
        return StreamItem(STATUS, {**params, "data": data}, event.event_id)
    return StreamItem(ARTIFACT, {**params, "artifact": data}, event.event_id)
