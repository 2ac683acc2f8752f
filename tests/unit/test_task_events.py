"""The numbered items behind SubscribeToTask's resume: what a log can replay, and what
it must refuse to guess."""

from __future__ import annotations

from cleveragents.app.task_events import EVENT_LOG_SIZE, RecentLogs, TaskEventLog, replay
from cleveragents.domain.task import Task, TaskState, TaskStatus, TaskStatusUpdate

TASK = Task("t1", "c1", TaskStatus(TaskState.WORKING, "2026-12-03T00:00:00.000Z"), (), ())


def update(n: int) -> TaskStatusUpdate:
    return TaskStatusUpdate("t1", "c1", TaskStatus(TaskState.WORKING, f"2026-12-03T00:00:{n % 60:02d}.000Z"))


def test_a_log_replays_what_came_after_an_id_it_holds():
    log = TaskEventLog("t1")
    start = log.snapshot(TASK).event_id
    sent = [log.append(update(n)) for n in range(5)]
    assert log.after(start) == sent  # from the state before the first item: everything
    assert log.after(sent[1].event_id) == sent[2:]
    assert log.after(sent[-1].event_id) == []
    assert [e.event_id for e in sent] == sorted({e.event_id for e in sent})
    assert log.after(sent[1].event_id.lower()) == sent[2:]  # ULIDs are case-insensitive


def test_ids_it_cannot_place_are_a_gap_not_a_guess():
    log = TaskEventLog("t1")
    sent = [log.append(update(n)) for n in range(EVENT_LOG_SIZE + 10)]
    assert log.after(sent[5].event_id) is None  # fallen out of the window
    assert log.after(sent[9].event_id) == sent[10:]  # the state before the oldest item kept
    assert log.after("not-a-ulid") is None and log.after("") is None and log.after(None) is None
    later = TaskEventLog("t1")  # e.g. after a restart: older ids are older than its start
    assert later.after(sent[-1].event_id) is None
    assert log.after(later.last) is None  # and one newer than anything this log holds


def test_a_gap_or_nothing_missed_starts_from_the_current_task():
    log = TaskEventLog("t1")
    seen = log.append(update(1))
    assert [e.item for e in replay(log, seen.event_id, TASK)] == [TASK]
    assert [e.item for e in replay(log, "01ARZ3NDEKTSV4RRFFQ69G5FAV", TASK)] == [TASK]  # older than the log
    assert replay(log, None, TASK)[0].event_id == seen.event_id  # the task as of the last item


def test_recent_logs_keep_the_newest_only():
    recent = RecentLogs(limit=2)
    for task_id in ("a", "b", "c"):
        recent.keep(TaskEventLog(task_id))
    assert recent.get("a") is None and recent.get("b") is not None and recent.get("c") is not None
    assert recent.take("b") is not None and recent.get("b") is None
    assert recent.open("d") is recent.open("d")


def test_big_artifact_chunks_are_kept_up_to_a_byte_budget():
    from cleveragents.app.task_events import EVENT_LOG_BYTES
    from cleveragents.domain.task import Artifact, Part, TaskArtifactUpdate

    log = TaskEventLog("t1")
    chunk = "x" * (EVENT_LOG_BYTES // 4)
    sent = [log.append(TaskArtifactUpdate("t1", "c1", Artifact("a", (Part.of_text(chunk),)), append=True))
            for _ in range(10)]
    kept = log.after(sent[-4].event_id)
    assert kept == sent[-3:]  # the newest few still resume
    assert log.after(sent[0].event_id) is None  # the early ones have fallen out: a gap
    # One item over the budget on its own is still kept, so the latest item can always resume.
    huge = log.append(TaskArtifactUpdate("t1", "c1", Artifact("a", (Part.of_text("y" * EVENT_LOG_BYTES * 2),))))
    assert log.after(sent[-1].event_id) == [huge]
