"""The numbered items behind SubscribeToTask's resume: what a log can replay, and what
it must refuse to guess."""

from __future__ import annotations

from cleveragents.app.ports import TaskEventLogs
from cleveragents.app.task_events import replay
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.actor import TextChunk
from cleveragents.domain.task import Message, Part, Role, Task, TaskState, TaskStatus, TaskStatusUpdate
from cleveragents.infra.store.memory_events import EVENT_LOG_SIZE, MemoryEventLog, MemoryEventLogs

TASK = Task("t1", "c1", TaskStatus(TaskState.WORKING, "2026-12-03T00:00:00.000Z"), (), ())


def update(n: int) -> TaskStatusUpdate:
    return TaskStatusUpdate("t1", "c1", TaskStatus(TaskState.WORKING, f"2026-12-03T00:00:{n % 60:02d}.000Z"))


def test_a_log_replays_what_came_after_an_id_it_holds():
    log = MemoryEventLog("t1")
    start = log.last
    sent = [log.append(update(n)) for n in range(5)]
    assert log.after(start) == sent  # from the state before the first item: everything
    assert log.after(sent[1].event_id) == sent[2:]
    assert log.after(sent[-1].event_id) == []
    assert [e.event_id for e in sent] == sorted({e.event_id for e in sent})
    assert log.after(sent[1].event_id.lower()) == sent[2:]  # ULIDs are case-insensitive


def test_ids_it_cannot_place_are_a_gap_not_a_guess():
    log = MemoryEventLog("t1")
    sent = [log.append(update(n)) for n in range(EVENT_LOG_SIZE + 10)]
    assert log.after(sent[5].event_id) is None  # fallen out of the window
    assert log.after(sent[9].event_id) == sent[10:]  # the state before the oldest item kept
    assert log.after("not-a-ulid") is None and log.after("") is None and log.after(None) is None
    later = MemoryEventLog("t1")  # e.g. after a restart: older ids are older than its start
    assert later.after(sent[-1].event_id) is None
    assert log.after(later.last) is None  # and one newer than anything this log holds


def test_a_gap_or_nothing_missed_starts_from_the_current_task():
    log = MemoryEventLog("t1")
    seen = log.append(update(1))
    assert [e.item for e in replay(log, seen.event_id, TASK)] == [TASK]
    assert [e.item for e in replay(log, "01ARZ3NDEKTSV4RRFFQ69G5FAV", TASK)] == [TASK]  # older than the log
    assert replay(log, None, TASK)[0].event_id == seen.event_id  # the task as of the last item


def test_recent_logs_keep_the_newest_only():
    recent = MemoryEventLogs(limit=2)
    for task_id in ("a", "b", "c"):
        recent.keep_event_log(recent.new_event_log(task_id))
    assert recent.kept_event_log("a") is None
    assert recent.kept_event_log("b") is not None and recent.kept_event_log("c") is not None
    assert recent.take_event_log("b") is not None and recent.kept_event_log("b") is None
    assert recent.open_event_log("d") is recent.open_event_log("d")


def test_big_artifact_chunks_are_kept_up_to_a_byte_budget():
    from cleveragents.domain.task import Artifact, Part, TaskArtifactUpdate
    from cleveragents.infra.store.memory_events import EVENT_LOG_BYTES

    log = MemoryEventLog("t1")
    chunk = "x" * (EVENT_LOG_BYTES // 4)
    sent = [log.append(TaskArtifactUpdate("t1", "c1", Artifact("a", (Part.of_text(chunk),)), append=True))
            for _ in range(10)]
    kept = log.after(sent[-4].event_id)
    assert kept == sent[-3:]  # the newest few still resume
    assert log.after(sent[0].event_id) is None  # the early ones have fallen out: a gap
    # One item over the budget on its own is still kept, so the latest item can always resume.
    huge = log.append(TaskArtifactUpdate("t1", "c1", Artifact("a", (Part.of_text("y" * EVENT_LOG_BYTES * 2),))))
    assert log.after(sent[-1].event_id) == [huge]


class Chunks:
    name = "test/chunks"

    async def respond(self, turn):
        for text in ("one", "two", "three"):
            yield TextChunk(text)


async def test_a_streamed_task_is_numbered_in_the_stores_event_logs(workspace):
    container = Container(Settings(workspace=workspace), actor=Chunks())
    try:
        assert isinstance(container.stores.events, TaskEventLogs)
        stream = await container.task_service.stream(Message("m1", Role.USER, (Part.of_text("go"),)))
        events = [event async for event in stream]
        kept = container.stores.events.kept_event_log(events[0].item.id)
        # The run's log went to the store's logs when it stopped: a late subscriber resumes from it.
        assert kept is not None and kept.after(events[0].event_id) == events[1:]
        assert kept.last == events[-1].event_id
    finally:
        await container.aclose()
