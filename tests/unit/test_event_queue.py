import asyncio
import threading

import pytest

from cleveragents.a2a.events import (
    EVENT_GAP,
    SESSION_STATUS_UPDATE,
    TASK_ARTIFACT_UPDATE,
    TASK_STATUS_UPDATE,
    A2AEventQueue,
    EventBusBridge,
)
from cleveragents.a2a.models import A2AEvent
from cleveragents.domain import events as domain


def status(plan_id="p1", **data):
    return A2AEvent(event_type=TASK_STATUS_UPDATE, plan_id=plan_id, data=data)


def test_the_publish_subscribe_example_runs_as_written():
    # A callback subscriber, one publish and a read of the buffer, as a user writes them.
    from cleveragents.a2a.events import TASK_STATUS_UPDATE, A2AEventQueue  # noqa: F811
    from cleveragents.a2a.models import A2AEvent  # noqa: F811

    queue = A2AEventQueue()
    seen = []

    def on_event(event: A2AEvent) -> None:
        seen.append(f"[{event.event_type}] plan={event.plan_id} data={event.data}")

    sub_id = queue.subscribe_local(on_event)
    queue.publish(A2AEvent(event_type=TASK_STATUS_UPDATE, plan_id="01HXRCF1...", data={"state": "working", "phase": "execute"}))
    events = queue.get_events(limit=50)
    queue.unsubscribe(sub_id)
    queue.close()
    assert seen == ["[TaskStatusUpdateEvent] plan=01HXRCF1... data={'state': 'working', 'phase': 'execute'}"]
    assert len(events) == 1


def test_ring_buffer_is_bounded_and_keeps_the_newest():
    queue = A2AEventQueue(capacity=3)
    published = [queue.publish(status(n=i)) for i in range(10)]
    assert [e.data["n"] for e in queue.get_events(limit=50)] == [7, 8, 9]
    assert [e.data["n"] for e in queue.get_events(limit=2)] == [8, 9]
    assert queue.get_events(limit=0) == []
    assert queue.last_event_id == published[-1].event_id


def test_events_since_resumes_after_a_cursor():
    queue = A2AEventQueue(capacity=10)
    published = [queue.publish(status(plan_id=f"p{i % 2}", n=i)) for i in range(6)]
    after, gap = queue.events_since(published[2].event_id)
    assert [e.data["n"] for e in after] == [3, 4, 5] and gap is False
    only_p1, _ = queue.events_since(published[0].event_id, plan_id="p1")
    assert [e.data["n"] for e in only_p1] == [1, 3, 5]
    assert queue.events_since(None) == ([], False)


def test_an_evicted_cursor_reports_a_gap():
    queue = A2AEventQueue(capacity=2)
    published = [queue.publish(status(n=i)) for i in range(5)]
    after, gap = queue.events_since(published[0].event_id)
    assert [e.data["n"] for e in after] == [3, 4] and gap is True


def test_callbacks_filter_and_failures_are_contained():
    queue = A2AEventQueue()
    got = []
    queue.subscribe_local(lambda e: got.append(e.plan_id), plan_id="p2")
    queue.subscribe_local(lambda e: 1 / 0)
    queue.publish(status(plan_id="p1"))
    queue.publish(status(plan_id="p2"))
    assert got == ["p2"]
    assert queue.unsubscribe("nope") is False


def test_publishing_the_same_event_twice_is_refused():
    queue = A2AEventQueue()
    event = queue.publish(status())
    with pytest.raises(ValueError):
        queue.publish(event)


async def test_async_subscribe_sees_live_events_for_its_plan():
    # The async form: `async for event in queue.subscribe("plan-42")`
    queue = A2AEventQueue()
    received = []

    async def consume():
        async for event in queue.subscribe("plan-42"):
            received.append((event.type, event.payload))
            if len(received) == 2:
                return

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    queue.publish(status(plan_id="other", n=0))
    queue.publish(status(plan_id="plan-42", n=1))
    queue.publish(status(plan_id="plan-42", n=2))
    await asyncio.wait_for(task, 2)
    assert received == [(TASK_STATUS_UPDATE, {"n": 1}), (TASK_STATUS_UPDATE, {"n": 2})]


async def test_async_subscribe_resumes_with_since_and_ends_on_close():
    queue = A2AEventQueue()
    first = queue.publish(status(n=1))
    queue.publish(status(n=2))
    seen = []

    async def consume():
        async for event in queue.subscribe(since=first.event_id):
            seen.append(event.data["n"])

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.01)
    queue.publish(status(n=3))
    await asyncio.sleep(0.01)
    queue.close()
    await asyncio.wait_for(task, 2)
    assert seen == [2, 3]
    assert queue.publish(status(n=4)) is not None  # a closed queue drops quietly
    assert queue.get_events() == queue.get_events(limit=50)


async def test_publish_from_other_threads_reaches_async_subscribers():
    queue = A2AEventQueue(capacity=10_000)
    cursor = queue.open_cursor()

    def produce(offset):
        for i in range(200):
            queue.publish(status(n=offset + i))

    threads = [threading.Thread(target=produce, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    got = []
    async for event in cursor:
        got.append(event.data["n"])
        if len(got) == 800:
            break
    for t in threads:
        t.join()
    cursor.close()
    assert sorted(got) == sorted(k * 1000 + i for k in range(4) for i in range(200))


async def test_a_slow_cursor_is_told_about_the_gap():
    queue = A2AEventQueue(capacity=3)
    cursor = queue.open_cursor()
    for i in range(10):
        queue.publish(status(n=i))
    gap = await cursor.__anext__()
    assert gap.event_type == EVENT_GAP and gap.data == {"missed": 7}
    assert [(await cursor.__anext__()).data["n"] for _ in range(3)] == [7, 8, 9]
    cursor.close()
    with pytest.raises(StopAsyncIteration):
        await cursor.__anext__()


def test_bridge_maps_domain_events_to_a2a_events():
    bus, queue = domain.EventBus(), A2AEventQueue()
    bridge = EventBusBridge(event_bus=bus, event_queue=queue)
    bridge.start()
    for name in sorted(domain.PLAN_STATUS_EVENTS):
        bus.publish(domain.DomainEvent(name, plan_id="p1", data={"phase": "execute", "state": "running"}))
    bus.publish(domain.DomainEvent(domain.CHECKPOINT_RESTORED, plan_id="p1", data={"files": 2}))
    bus.publish(domain.DomainEvent(domain.SESSION_CREATED, session_id="s1"))
    bus.publish(domain.DomainEvent("SOMETHING_ELSE"))
    bridge.stop()
    bus.publish(domain.DomainEvent(domain.PLAN_CREATED, plan_id="late"))
    events = queue.get_events(limit=100)
    assert [e.event_type for e in events] == [TASK_STATUS_UPDATE] * 6 + [TASK_ARTIFACT_UPDATE, SESSION_STATUS_UPDATE]
    assert {e.data["domain_event"] for e in events[:6]} == domain.PLAN_STATUS_EVENTS
    assert events[0].plan_id == "p1" and events[0].data["state"] == "running"
    assert events[-1].data["session_id"] == "s1"
    assert not bridge.running


async def test_live_subscriptions_are_bounded():
    from cleveragents.a2a.subscriptions import EventSubscriptions
    from cleveragents.app.calls import CallContext
    from cleveragents.domain.errors import BusinessRuleViolation

    subs = EventSubscriptions(A2AEventQueue(), limit=2)
    context = CallContext(method="", dialect="", push=True)
    first = await subs.subscribe(context=context)
    await subs.subscribe(context=context)
    with pytest.raises(BusinessRuleViolation) as info:
        await subs.subscribe(context=context)
    assert info.value.data["limit"] == 2
    await subs.unsubscribe(first.key)
    await subs.subscribe(context=context)
    assert subs.live_count == 2 and first.items.closed


async def test_one_token_subject_takes_at_most_its_share_of_live_subscriptions():
    """The bound is the server's: one caller holding all of it would leave every other
    caller refused. Callers known by a token's subject each get a share; callers with the
    configured secret (no subject) are the operator's own, and share the whole."""
    from cleveragents.a2a.subscriptions import EventSubscriptions
    from cleveragents.app.calls import CallContext
    from cleveragents.domain.caller import CallerIdentity
    from cleveragents.domain.errors import BusinessRuleViolation

    subs = EventSubscriptions(A2AEventQueue(), limit=8, per_caller=3)

    def as_(subject: str | None, issuer: str = "https://issuer.example") -> CallContext:
        identity = CallerIdentity("oauth2" if subject else "bearerAuth", subject=subject,
                                  issuer=issuer if subject else None)
        return CallContext(method="", dialect="", push=True, caller=identity)

    for _ in range(3):
        await subs.subscribe(context=as_("mallory"))
    with pytest.raises(BusinessRuleViolation) as refused:
        await subs.subscribe(context=as_("mallory"))
    assert refused.value.data == {"limit": 3, "scope": "caller", "allowed_actions": ["_cleveragents/event/unsubscribe"]}
    await subs.subscribe(context=as_("mallory", issuer="https://other.example"))  # another issuer's mallory
    await subs.subscribe(context=as_("alice"))
    for _ in range(3):
        await subs.subscribe(context=as_(None))
    assert subs.live_count == 8
    with pytest.raises(BusinessRuleViolation) as full:
        await subs.subscribe(context=as_("bob"))
    assert full.value.data["scope"] == "server" and full.value.data["limit"] == 8
