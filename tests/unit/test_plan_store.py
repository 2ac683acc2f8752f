"""The plan store contract, on every store: the SQLite file, the in-memory store and PostgreSQL."""

import sqlite3
from dataclasses import replace

import pytest

from cleveragents.domain.plan import Decision, Phase, Plan, Profile, State, Step
from cleveragents.domain.plan_files import Checkpoint, CheckpointEntry, OverlayRecord, PlanArtifact
from cleveragents.infra.store.sqlite import DB_FILENAME, MIGRATIONS, SqliteStore
from tests.store_kinds import STORE_KINDS, open_store

T0, T1 = "2026-01-01T00:00:00.000Z", "2026-01-01T00:01:00.000Z"


def make_plan(plan_id, session_id="s1", state=State.READY):
    phase = Phase.PLAN if state in (State.READY, State.INPUT_REQUIRED) else Phase.EXECUTE
    return Plan(plan_id, "local/edit", {"path": "a.py", "n": [1, 2]}, Profile.SUPERVISED,
                (Step("s-1", "write_file", {"path": "a.py"}, "because"),), T0, T0, phase, state,
                session_id, None, ("be brief",), {"origin": {"editor": "vim"}})


def make_decision(decision_id, plan_id="p1", outcome="pending"):
    return Decision(decision_id, plan_id, "s-1", "write_file", {"path": "a.py"}, None, "why", outcome,
                    "wrote a.py", ("a.py",), ("a.py",), {"bytes": 3}, None, (), T0, T1, 12.5)


def make_artifact(artifact_id, name="diff.patch"):
    return PlanArtifact(artifact_id, "d1", name, "text/x-diff", "f" * 64, 12, T0)


@pytest.fixture(params=STORE_KINDS)
async def store(request, tmp_path):
    store = open_store(request.param, request, tmp_path / "state")
    yield store
    await store.close()


async def test_plan_round_trip_and_save(store):
    await store.add_plan(make_plan("p1"))
    assert await store.get_plan("p1") == make_plan("p1")
    assert await store.get_plan("missing") is None
    moved = make_plan("p1").moved(Phase.EXECUTE, State.RUNNING, T1, "started")
    await store.save_plan(moved)
    assert await store.get_plan("p1") == moved
    with pytest.raises(KeyError):
        await store.save_plan(make_plan("missing"))
    with pytest.raises(ValueError, match="already exists"):
        await store.add_plan(make_plan("p1"))


async def test_stored_plans_dont_share_the_callers_dicts(store):
    plan = make_plan("p1")
    await store.add_plan(plan)
    plan.metadata["origin"]["editor"] = "emacs"
    assert (await store.get_plan("p1")).metadata == {"origin": {"editor": "vim"}}


async def test_list_newest_first_with_cursor_and_counts(store):
    for n, session in enumerate(["s1", "s2", "s1", "s2", "s1"]):
        await store.add_plan(make_plan(f"p{n}", session))
    page = await store.list_plans(limit=2, before=None)
    assert [p.plan_id for _, p in page] == ["p4", "p3"]
    rest = await store.list_plans(limit=10, before=page[-1][0])
    assert [p.plan_id for _, p in rest] == ["p2", "p1", "p0"]
    first = await store.list_plans(session_id="s1", limit=2, before=None)
    assert [p.plan_id for _, p in first] == ["p4", "p2"]
    second = await store.list_plans(session_id="s1", limit=2, before=first[-1][0])
    assert [p.plan_id for _, p in second] == ["p0"]
    assert await store.count_plans() == 5
    assert await store.count_plans(session_id="s2") == 2
    assert await store.count_plans(session_id="none") == 0


async def test_plans_in_states_oldest_first(store):
    await store.add_plan(make_plan("a", state=State.RUNNING))
    await store.add_plan(make_plan("b", state=State.COMPLETED))
    await store.add_plan(make_plan("c", state=State.INPUT_REQUIRED))
    await store.add_plan(make_plan("d", state=State.RUNNING))
    await store.save_plan(make_plan("b", state=State.RUNNING))
    found = await store.plans_in_states({State.RUNNING})
    assert [p.plan_id for p in found] == ["a", "b", "d"]
    either = await store.plans_in_states([State.INPUT_REQUIRED, State.COMPLETED])
    assert [p.plan_id for p in either] == ["c"]
    assert await store.plans_in_states([]) == []


async def test_decisions_upsert_keeps_first_order(store):
    await store.add_plan(make_plan("p1"))
    for decision_id in ["d1", "d2", "d3"]:
        await store.save_decision(make_decision(decision_id))
    await store.save_decision(make_decision("d1", outcome="succeeded"))
    decisions = await store.list_decisions("p1")
    assert [d.decision_id for d in decisions] == ["d1", "d2", "d3"]
    assert decisions[0] == make_decision("d1", outcome="succeeded")
    assert await store.get_decision("p1", "d2") == make_decision("d2")
    assert await store.get_decision("p1", "nope") is None
    assert await store.list_decisions("other") == []
    with pytest.raises(KeyError):
        await store.save_decision(make_decision("d9", plan_id="missing"))


def written(path, mode=0o644):
    return OverlayRecord(path, "b" * 64, mode, None, 3)


def deleted(path):
    return OverlayRecord(path, None, None, "a" * 64, 0, 0o600)


def checkpoint(*paths):
    return Checkpoint("p1", T1, tuple(CheckpointEntry(p, False, None, None, "c" * 64, 0o644) for p in paths), ("d",))


async def test_overlay_is_replaced_whole(store):
    await store.add_plan(make_plan("p1"))
    assert await store.load_overlay("p1") == []
    await store.replace_overlay("p1", [written("b.py"), deleted("a.py")])
    assert await store.load_overlay("p1") == [written("b.py"), deleted("a.py")]
    await store.replace_overlay("p1", [written("c.py", 0o755)])
    assert await store.load_overlay("p1") == [written("c.py", 0o755)]
    with pytest.raises(ValueError, match="appears twice"):
        await store.replace_overlay("p1", [written("x"), deleted("x")])
    with pytest.raises(TypeError, match="path"):
        await store.replace_overlay("p1", [written(None)])
    assert await store.load_overlay("p1") == [written("c.py", 0o755)]
    with pytest.raises(KeyError):
        await store.replace_overlay("missing", [])


async def test_checkpoint_upsert(store):
    await store.add_plan(make_plan("p1"))
    assert await store.get_checkpoint("p1") is None
    await store.put_checkpoint("p1", checkpoint("a.py"))
    await store.put_checkpoint("p1", checkpoint("a.py", "b.py"))
    assert await store.get_checkpoint("p1") == checkpoint("a.py", "b.py")
    with pytest.raises(KeyError):
        await store.put_checkpoint("missing", checkpoint())


async def test_artifact_index_in_insertion_order(store):
    await store.add_plan(make_plan("p1"))
    await store.add_plan(make_plan("p2"))
    await store.add_plan_artifact("p1", make_artifact("z", "log.txt"))
    await store.add_plan_artifact("p1", make_artifact("a"))
    await store.add_plan_artifact("p2", make_artifact("a"))
    assert await store.list_plan_artifacts("p1") == [make_artifact("z", "log.txt"), make_artifact("a")]
    assert await store.list_plan_artifacts("p2") == [make_artifact("a")]
    with pytest.raises(ValueError, match="already exists"):
        await store.add_plan_artifact("p1", make_artifact("a", "other"))
    with pytest.raises(KeyError):
        await store.add_plan_artifact("missing", make_artifact("a"))
    assert len(await store.list_plan_artifacts("p1")) == 2


async def test_pins_upsert_delete_and_order(store):
    await store.set_pin("session:s1", "style", {"tabs": False})
    await store.set_pin("session:s1", "files", ["a.py"])
    await store.set_pin("plan:p1", "style", "other scope")
    await store.set_pin("session:s1", "style", None)
    assert await store.list_pins("session:s1") == [("style", None), ("files", ["a.py"])]
    assert await store.delete_pin("session:s1", "style") is True
    assert await store.delete_pin("session:s1", "style") is False
    assert await store.list_pins("session:s1") == [("files", ["a.py"])]
    assert await store.list_pins("plan:p1") == [("style", "other scope")]
    assert await store.list_pins("plan:none") == []


async def test_save_plan_state_writes_all_parts(store):
    await store.add_plan(make_plan("p1"))
    await store.save_decision(make_decision("d1"))
    await store.replace_overlay("p1", [written("old.py")])
    moved = make_plan("p1").moved(Phase.EXECUTE, State.COMPLETED, T1)
    done = [make_decision("d1", outcome="succeeded"), make_decision("d2", outcome="failed")]
    await store.save_plan_state(moved, done, [written("new.py")])
    assert await store.get_plan("p1") == moved
    assert await store.list_decisions("p1") == done
    assert await store.load_overlay("p1") == [written("new.py")]
    # None leaves the overlay alone; an empty list clears it.
    await store.save_plan_state(replace(moved, reason="kept"), [], None)
    assert await store.load_overlay("p1") == [written("new.py")]
    await store.save_plan_state(moved, [], [])
    assert await store.load_overlay("p1") == []


async def test_save_plan_state_is_all_or_nothing(store):
    await store.add_plan(make_plan("p1"))
    await store.save_decision(make_decision("d1"))
    await store.replace_overlay("p1", [written("old.py")])
    moved = make_plan("p1").moved(Phase.EXECUTE, State.COMPLETED, T1)
    # The overlay is written last, so its unencodable record fails after the plan
    # and the decisions were already written in the transaction.
    with pytest.raises(TypeError):
        await store.save_plan_state(moved, [make_decision("d1", outcome="succeeded"), make_decision("d2")],
                                    [OverlayRecord("new.py", object(), None, None)])
    assert await store.get_plan("p1") == make_plan("p1")
    assert await store.list_decisions("p1") == [make_decision("d1")]
    assert await store.load_overlay("p1") == [written("old.py")]
    with pytest.raises(ValueError, match="don't belong"):
        await store.save_plan_state(moved, [make_decision("d3", plan_id="p2")], None)
    with pytest.raises(KeyError):
        await store.save_plan_state(make_plan("missing"), [], None)
    assert await store.get_plan("p1") == make_plan("p1")
    # The store is still usable after the rolled-back transaction.
    await store.save_plan_state(moved, [], None)
    assert await store.get_plan("p1") == moved


async def test_sqlite_keeps_everything_across_a_restart(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    moved = make_plan("p1").moved(Phase.EXECUTE, State.RUNNING, T1)
    await store.add_plan(make_plan("p1"))
    await store.save_plan_state(moved, [make_decision("d1"), make_decision("d2")], [deleted("a.py")])
    await store.put_checkpoint("p1", checkpoint("a.py"))
    await store.add_plan_artifact("p1", make_artifact("x"))
    await store.set_pin("plan:p1", "k", [1, {"v": True}])
    await store.close()
    again = SqliteStore.open_in(tmp_path)
    try:
        assert [p.plan_id for p in await again.plans_in_states([State.RUNNING])] == ["p1"]
        assert await again.get_plan("p1") == moved
        assert [d.decision_id for d in await again.list_decisions("p1")] == ["d1", "d2"]
        assert await again.load_overlay("p1") == [deleted("a.py")]
        assert await again.get_checkpoint("p1") == checkpoint("a.py")
        assert await again.list_plan_artifacts("p1") == [make_artifact("x")]
        assert await again.list_pins("plan:p1") == [("k", [1, {"v": True}])]
        await again.add_plan(make_plan("p2"))
        assert [p.plan_id for _, p in await again.list_plans(limit=5, before=None)] == ["p2", "p1"]
    finally:
        await again.close()


async def test_sqlite_migrates_a_version_2_database_keeping_its_rows(tmp_path):
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        raw.executescript(MIGRATIONS[0] + MIGRATIONS[1])
        raw.execute("PRAGMA user_version = 2")
        raw.execute("INSERT INTO sessions (session_id, actor_name, status, created_at, updated_at) "
                    "VALUES ('s1', 'local/default', 'active', ?, ?)", (T0, T0))
        raw.execute("INSERT INTO tasks (task_id, context_id, state, status_at, body) "
                    "VALUES ('t1', 'c1', 'working', ?, '{\"id\": \"t1\"}')", (T0,))
        tasks_before = raw.execute("SELECT * FROM tasks").fetchall()
    raw.close()
    store = SqliteStore.open_in(tmp_path)
    try:
        assert (await store.get_session("s1")).actor_name == "local/default"
        await store.add_plan(make_plan("p1", session_id="s1"))
        assert await store.count_plans(session_id="s1") == 1
    finally:
        await store.close()
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 5
        assert raw.execute("SELECT * FROM tasks").fetchall() == tasks_before
    raw.close()


async def test_sqlite_list_and_count_use_indexes(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    try:
        def plan_of(sql):
            return " ".join(row[-1] for row in store._db().execute("EXPLAIN QUERY PLAN " + sql))

        queries = {
            "SELECT body FROM plans WHERE session_id = 's' AND seq < 9 ORDER BY seq DESC LIMIT 5":
                "plans_by_session",
            "SELECT COUNT(*) FROM plans WHERE session_id = 's'": "plans_by_session",
            "SELECT body FROM plan_decisions WHERE plan_id = 'p' ORDER BY seq": "plan_decisions_by_plan",
            "SELECT record FROM plan_artifacts WHERE plan_id = 'p' ORDER BY seq": "plan_artifacts_by_plan",
            "SELECT key FROM context_pins WHERE scope = 's' ORDER BY seq": "context_pins_by_scope",
        }
        for sql, index in queries.items():
            described = await store._run(plan_of, sql)
            assert index in described and "TEMP B-TREE" not in described, (sql, described)
    finally:
        await store.close()
