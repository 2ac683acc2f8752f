"""Stream items as stdio notifications: a call's items, and a subscription's events."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Callable
from typing import Any

from cleveragents.a2a.streams import (
    ARTIFACT_NOTIFICATION,
    EVENT_NOTIFICATION,
    STATUS_NOTIFICATION,
    StreamItem,
    event_notifications,
)

logger = logging.getLogger(__name__)

__all__ = ["ARTIFACT_NOTIFICATION", "EVENT_NOTIFICATION", "STATUS_NOTIFICATION", "pump_events"]


async def pump_events(
    subscription_id: str, events: AsyncIterable[StreamItem], notify: Callable[[str, Any], None]
) -> None:
    """Send each event of a subscription (an ``_cleveragents/event`` notification, then
    its ``task/*`` one) until it ends; then close it, so a cancelled pump never leaves
    its cursor registered."""
    try:
        async for item in events:
            for method, params in event_notifications(item):
                notify(method, params)
    finally:
        if callable(close := getattr(events, "close", None)):
            close()
        logger.debug("subscription %s ended", subscription_id)
