"""Turning queue events into stdio notifications for a subscription."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Callable
from typing import Any

logger = logging.getLogger(__name__)

EVENT_NOTIFICATION = "_cleveragents/event"
STATUS_NOTIFICATION = "task/statusUpdate"
ARTIFACT_NOTIFICATION = "task/artifactUpdate"


def task_notification(event: Any) -> tuple[str, dict[str, Any]] | None:
    """The ``task/*`` notification for a task or plan event, if it is one."""
    from cleveragents.a2a.events import TASK_ARTIFACT_UPDATE, TASK_STATUS_UPDATE

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
        return STATUS_NOTIFICATION, {**params, "data": data}
    return ARTIFACT_NOTIFICATION, {**params, "artifact": data}


async def pump_events(
    subscription_id: str, events: AsyncIterable[Any], notify: Callable[[str, Any], None]
) -> None:
    """Send each event of a subscription until it ends; then close it, so a
    cancelled pump never leaves its cursor registered."""
    try:
        async for event in events:
            params = event.to_wire()
            params["subscription_id"] = subscription_id
            notify(EVENT_NOTIFICATION, params)
            if (task := task_notification(event)) is not None:
                notify(*task)
    finally:
        if callable(close := getattr(events, "close", None)):
            close()
        logger.debug("subscription %s ended", subscription_id)
