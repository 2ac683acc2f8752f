import asyncio

from cleveragents.a2a.events import SESSION_STATUS_UPDATE, TASK_ARTIFACT_UPDATE, TASK_STATUS_UPDATE, A2AEventQueue
from cleveragents.a2a.models import A2AEvent
from cleveragents.a2a.subscriptions import EventFeed, task_update
from cleveragents.transports.lsp.notifications import pump_events


async def test_task_events_also_go_out_as_task_notifications():
    queue = A2AEventQueue()
    sent = []
    cursor = queue.open_cursor()
    pump = asyncio.ensure_future(pump_events("sub-1", EventFeed("sub-1", cursor), lambda m, p: sent.append((m, p))))
    status = queue.publish(A2AEvent(event_type=TASK_STATUS_UPDATE, plan_id="p1", data={"phase": "execute", "state": "running"}))
    queue.publish(A2AEvent(event_type=TASK_ARTIFACT_UPDATE, plan_id="p1", data={"name": "diff"}))
    queue.publish(A2AEvent(event_type=SESSION_STATUS_UPDATE, data={"session_id": "s"}))
    for _ in range(100):
        if len(sent) == 5:
            break
        await asyncio.sleep(0.01)
    cursor.close()
    await asyncio.wait_for(pump, 2)
    assert [m for m, _ in sent] == ["_cleveragents/event", "task/statusUpdate", "_cleveragents/event",
                                    "task/artifactUpdate", "_cleveragents/event"]
    assert sent[0][1]["subscription_id"] == "sub-1" and sent[0][1]["event_id"] == status.event_id
    assert sent[1][1] == {"taskId": "p1", "planId": "p1", "phase": "execute", "state": "running",
                          "eventId": status.event_id, "timestamp": status.timestamp,
                          "data": {"phase": "execute", "state": "running"}}
    assert sent[3][1]["artifact"] == {"name": "diff"}


def test_non_task_events_have_no_task_update():
    assert task_update(A2AEvent(event_type=SESSION_STATUS_UPDATE)) is None
