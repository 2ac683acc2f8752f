"""Stored records that can't be served, in both stores: lists skip them and still fill
their pages, single reads name them, each is logged once and reported.

SQLite records are spoiled through a second connection, as an older version or a hand
edit would leave them; in-memory ones are stored with a value nested too deep, as a
bug would store them (the request limits keep clients from doing it).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import replace
from typing import Any

import pytest

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.json_limits import MAX_RECORD_DEPTH
from cleveragents.domain.plan import Decision, Plan, Profile, Step
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, PlanArtifact
from cleveragents.domain.session import Session
from cleveragents.domain.task import Message, Part, PushConfig, Role, Task, TaskState, TaskStatus
from cleveragents.infra.store.memory import MemoryStore
from cleveragents.infra.store.sqlite import DB_FILENAME, SqliteStore
from tests.store_kinds import STORE_KINDS, open_store

NOW = "2026-01-01T00:00:00.000Z"


def nest(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def make_task(task_id: str, context_id: str = "ctx", state: TaskState = TaskState.COMPLETED,
              metadata: dict[str, Any] | None = None) -> Task:
    message = Message(f"m-{task_id}", Role.USER, (Part.of_text("hi"),), context_id, task_id)
    return Task(task_id, context_id, TaskStatus(state, NOW), (message,), (), metadata)


def make_plan(plan_id: str, arguments: dict[str, Any] | None = None) -> Plan:
    return Plan(plan_id, "replace", arguments or {"pattern": "a"}, Profile.SUPERVISED,
                (Step("s1", "fs.replace", {"pattern": "a"}),), NOW, NOW)


class Spoiler:
    """Puts records that can't be served into a store, the way each store can get them."""

    def __init__(self, store: Any, tmp_path: Any):
        self.store = store
        self.path = tmp_path / "state" / DB_FILENAME

    @property
    def sqlite(self) -> bool:
        return isinstance(self.store, SqliteStore)

    def _sql(self, sql: str, args: tuple[Any, ...]) -> None:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            assert db.execute(sql, args).rowcount == 1
        finally:
            db.close()

    async def task(self, task: Task) -> None:
        """``task`` with metadata nested past the limit."""
        spoiled = replace(task, metadata={"deep": nest(MAX_RECORD_DEPTH + 5)})
        if self.sqlite:
            self._sql("UPDATE tasks SET body = ? WHERE task_id = ?", (json.dumps(spoiled.to_dict()), task.id))
        else:
            await self.store.save_task(spoiled)


@pytest.fixture(params=STORE_KINDS)
async def store(request, tmp_path):
    store = open_store(request.param, request, tmp_path / "state")
    yield store
    await store.close()


@pytest.fixture
def spoil(store, tmp_path):
    return Spoiler(store, tmp_path)


async def test_a_page_fills_past_the_tasks_it_skips(store, spoil):
    tasks = [make_task(f"t{n}", context_id="ctx" if n % 2 else "other") for n in range(1, 8)]
    for task in tasks:
        await store.add_task(task)
    for n in (2, 3, 4, 6):
        await spoil.task(tasks[n - 1])
    first = await store.list_tasks(limit=2)
    assert [task.id for _, task in first] == ["t7", "t5"]
    rest = await store.list_tasks(limit=2, before=first[-1][0])
    assert [task.id for _, task in rest] == ["t1"]
    in_context = await store.list_tasks(context_id="ctx", limit=10)
    assert [task.id for _, task in in_context] == ["t7", "t5", "t1"]
    done = await store.list_tasks(states=[TaskState.COMPLETED], limit=10)
    assert [task.id for _, task in done] == ["t7", "t5", "t1"]
    later = await store.list_tasks(status_after="2025-12-31T00:00:00Z", limit=2)
    assert [task.id for _, task in later] == ["t7", "t5"]
    assert await store.count_tasks() == 7  # counts are of stored tasks, as documented


async def test_reading_a_task_that_cant_be_served_names_it(store, spoil):
    live = make_task("live", state=TaskState.WORKING)
    await store.add_task(live)
    await store.add_task(make_task("fine", state=TaskState.WORKING))
    await spoil.task(live)
    with pytest.raises(UnreadableRecordError) as caught:
        await store.get_task("live")
    assert caught.value.data["store"] == "tasks" and caught.value.data["id"] == "live"
    assert f"deeper than {MAX_RECORD_DEPTH} levels" in caught.value.data["reason"]
    assert "metadata.deep.a" in caught.value.data["reason"]
    assert [task.id for task in await store.live_tasks()] == ["fine"]


async def test_each_record_is_logged_once_and_reported_until_it_reads_well(store, spoil, caplog):
    task = make_task("t1")
    await store.add_task(task)
    await spoil.task(task)
    with caplog.at_level(logging.WARNING, logger="cleveragents.store"):
        for _ in range(3):
            assert await store.list_tasks(limit=5) == []
        with pytest.raises(UnreadableRecordError):
            await store.get_task("t1")
    warnings = [r for r in caplog.records if "can't be served" in r.getMessage()]
    assert len(warnings) == 1 and "tasks t1 " in warnings[0].getMessage()
    assert [(e["store"], e["id"]) for e in store.unreadable_records()] == [("tasks", "t1")]
    await store.save_task(task)  # rewritten whole: it reads well again
    assert [t.id for _, t in await store.list_tasks(limit=5)] == ["t1"]
    assert store.unreadable_records() == []


async def test_sessions_push_configs_and_pins_that_cant_be_served_are_skipped(store, spoil):
    good = Session("good", "local/default", NOW, NOW)
    bad = Session("bad", "local/default", NOW, NOW, metadata={"deep": nest(MAX_RECORD_DEPTH + 1)})
    await store.add_session(good)
    await store.add_session(bad)
    assert [s.session_id for _, s in await store.list_sessions(None, 10, None)] == ["good"]
    with pytest.raises(UnreadableRecordError):
        await store.get_session("bad")
    await store.add_task(make_task("t"))
    await store.put_push_config(PushConfig("ok", "t", "https://example.invalid/a"))
    await store.put_push_config(PushConfig("deep", "t", "https://example.invalid/b", None, nest(MAX_RECORD_DEPTH)))
    assert [c.id for c in await store.list_push_configs("t")] == ["ok"]
    with pytest.raises(UnreadableRecordError):
        await store.get_push_config("t", "deep")
    await store.set_pin("session:good", "deep", nest(MAX_RECORD_DEPTH + 1))
    await store.set_pin("session:good", "null", None)
    assert await store.list_pins("session:good") == [("null", None)]
    reported = {(e["store"], e["id"]) for e in store.unreadable_records()}
    assert reported == {("sessions", "bad"), ("push_configs", "t/deep"), ("context_pins", "session:good/deep")}


async def test_plans_and_their_records_that_cant_be_served(store, spoil):
    await store.add_plan(make_plan("p1"))
    await store.add_plan(make_plan("p2", {"deep": nest(MAX_RECORD_DEPTH + 1)}))
    await store.add_plan(make_plan("p3"))
    first = await store.list_plans(limit=1)
    assert [plan.plan_id for _, plan in first] == ["p3"]
    assert [plan.plan_id for _, plan in await store.list_plans(limit=5, before=first[-1][0])] == ["p1"]
    assert await store.count_plans() == 3
    with pytest.raises(UnreadableRecordError):
        await store.get_plan("p2")
    assert {p.plan_id for p in await store.plans_in_states([make_plan("x").state])} == {"p1", "p3"}
    await store.save_decision(Decision("d1", "p1", "s1", "fs.replace", {"pattern": "a"}))
    await store.save_decision(Decision("d2", "p1", "s1", "fs.replace", {"deep": nest(MAX_RECORD_DEPTH)}))
    assert [d.decision_id for d in await store.list_decisions("p1")] == ["d1"]
    with pytest.raises(UnreadableRecordError):
        await store.get_decision("p1", "d2")
    # An overlay or a checkpoint is read whole or not at all: a plan missing a file would apply wrong.
    await store.replace_overlay("p1", [OverlayRecord("a.txt", "x", None, None),
                                       OverlayRecord("b.txt", nest(MAX_RECORD_DEPTH), None, None)])
    with pytest.raises(UnreadableRecordError):
        await store.load_overlay("p1")
    await store.put_checkpoint("p1", Checkpoint("p1", NOW, (), (nest(MAX_RECORD_DEPTH),)))
    with pytest.raises(UnreadableRecordError):
        await store.get_checkpoint("p1")
    artifact = PlanArtifact("a1", "d1", "n", "text/plain", "b", 1, NOW)
    await store.add_plan_artifact("p1", artifact)
    await store.add_plan_artifact("p1", replace(artifact, artifact_id="a2", name=nest(MAX_RECORD_DEPTH)))
    assert [a.artifact_id for a in await store.list_plan_artifacts("p1")] == ["a1"]


@pytest.fixture
async def sqlite_store(tmp_path):
    store = SqliteStore.open_in(tmp_path / "state")
    yield store, Spoiler(store, tmp_path)
    await store.close()


@pytest.mark.parametrize(("body", "reason"), [
    ("{not json", "is not JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    ('{"id": "t1", "context_id": "ctx"}', "lacks the field 'status'"),
    ('{"id": "t1", "context_id": "ctx", "status": {"state": "sleeping"}}', "does not decode: ValueError"),
    ('{"id": "t1", "context_id": "ctx", "status": {"state": "completed"}, "metadata": '
     + "[" * 5000 + "]" * 5000 + "}", "nests deeper than the JSON parser takes"),
    ('{"id": "t1", "context_id": "ctx", "status": {"state": "completed"}, "metadata": '
     + "[" * 200 + "]" * 200 + "}", f"nests deeper than {MAX_RECORD_DEPTH} levels (at metadata.0.0.0"),
])
async def test_sqlite_says_why_a_task_cant_be_served(sqlite_store, body, reason):
    store, spoil = sqlite_store
    await store.add_task(make_task("t1"))
    await store.add_task(make_task("t2"))
    spoil._sql("UPDATE tasks SET body = ? WHERE task_id = 't1'", (body,))
    assert [task.id for _, task in await store.list_tasks(limit=5)] == ["t2"]
    with pytest.raises(UnreadableRecordError) as caught:
        await store.get_task("t1")
    assert caught.value.data["reason"].startswith(reason), caught.value.data["reason"]
    assert caught.value.message.startswith("tasks record t1 can't be read: ")


async def test_sqlite_session_metadata_must_be_an_object(sqlite_store):
    store, spoil = sqlite_store
    await store.add_session(Session("s1", "local/default", NOW, NOW))
    spoil._sql("UPDATE sessions SET metadata = '[1, 2]' WHERE session_id = 's1'", ())
    with pytest.raises(UnreadableRecordError, match="not an object"):
        await store.get_session("s1")
    assert await store.list_sessions(None, 5, None) == []


async def test_memory_plan_records_that_are_not_json_are_skipped():
    store = MemoryStore()
    await store.add_plan(make_plan("p1"))
    await store.add_plan(make_plan("p2"))
    seq, _ = store.plans._plan_bodies["p1"]
    store.plans._plan_bodies["p1"] = (seq, "{broken")  # what a bug writing the body would leave
    assert [plan.plan_id for _, plan in await store.list_plans(limit=5)] == ["p2"]
    assert await store.count_plans() == 2
    with pytest.raises(UnreadableRecordError, match="is not JSON"):
        await store.get_plan("p1")


async def test_a_page_reads_past_many_skipped_rows(sqlite_store):
    store, spoil = sqlite_store
    await store.add_task(make_task("first"))
    for n in range(300):
        await store.add_task(make_task(f"bad{n:03}"))
    await store.add_task(make_task("last"))
    db = sqlite3.connect(spoil.path, isolation_level=None)
    try:
        db.execute("UPDATE tasks SET body = 'x' WHERE task_id LIKE 'bad%'")
    finally:
        db.close()
    page = await store.list_tasks(limit=2)
    assert [task.id for _, task in page] == ["last", "first"]
    assert len(store.unreadable_records()) == 300


def test_past_the_records_kept_one_warning_says_so_and_nothing_floods(monkeypatch, caplog):
    from cleveragents.infra.store import records

    monkeypatch.setattr(records, "MAX_KEPT", 2)
    reader = records.RecordReader()
    with caplog.at_level(logging.WARNING, logger="cleveragents.store"):
        for _ in range(3):
            for n in range(4):
                assert reader.skip("tasks", f"t{n}", "{", as_is) is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3 and "more than 2 stored records can't be served" in messages[2]
    assert [e["id"] for e in reader.report()] == ["t0", "t1"]


def as_is(value: Any) -> Any:
    return value
