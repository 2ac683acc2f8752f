"""The SQLite task counters, kept by triggers since schema 5: right on a database that
counted in Python before, through inserts, moves, evictions and rollbacks."""

import asyncio
import json
import sqlite3

from cleveragents.domain.task import Task, TaskState, TaskStatus
from cleveragents.infra.store.sqlite import DB_FILENAME, MIGRATIONS, SqliteStore, statements

S = TaskState


def make_task(task_id, context_id="ctx", state=S.SUBMITTED, second=0):
    return Task(task_id, context_id, TaskStatus(state, f"2026-01-01T00:00:{second % 60:02d}.000Z"))


def counters(path):
    with sqlite3.connect(path) as raw:
        states = dict(raw.execute("SELECT state, n FROM task_state_counts WHERE n != 0"))
        contexts = {(c, s): n for c, s, n in raw.execute("SELECT context_id, state, n FROM task_context_counts")}
    raw.close()
    return states, contexts


def recounted(path):
    """The counters as a scan of the rows gives them."""
    with sqlite3.connect(path) as raw:
        states = dict(raw.execute("SELECT state, COUNT(*) FROM tasks GROUP BY state"))
        contexts = {(c, s): n for c, s, n in raw.execute(
            "SELECT context_id, state, COUNT(*) FROM tasks GROUP BY context_id, state")}
    raw.close()
    return states, contexts


def schema_4_database(path):
    """A database as schema 4 left it: counters written by the code, no triggers."""
    with sqlite3.connect(path) as raw:
        for version, script in enumerate(MIGRATIONS[:4], start=1):
            for statement in statements(script):
                raw.execute(statement)
            raw.execute(f"PRAGMA user_version = {version}")
        for n, (context_id, state) in enumerate([("a", S.COMPLETED), ("a", S.WORKING), ("b", S.FAILED)]):
            task = make_task(f"old{n}", context_id, state)
            raw.execute("INSERT INTO tasks (task_id, context_id, state, status_at, terminal_seq, body) "
                        "VALUES (?, ?, ?, NULL, ?, ?)", (task.id, context_id, state.value,
                                                         n + 1 if task.terminal else None, json.dumps(task.to_dict())))
            raw.execute("INSERT INTO task_state_counts VALUES (?, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1",
                        (state.value,))
            raw.execute("INSERT INTO task_context_counts VALUES (?, ?, 1)", (context_id, state.value))
    raw.close()


def test_a_trigger_body_is_one_statement():
    script = "CREATE TABLE t (x); CREATE TRIGGER r AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END;\n"
    assert [s.split()[1] for s in statements(script)] == ["TABLE", "TRIGGER"]


async def test_a_schema_4_database_keeps_counting_right_after_the_migration(tmp_path):
    db = tmp_path / DB_FILENAME
    schema_4_database(db)
    store = SqliteStore.open_in(tmp_path, terminal_cap=2)
    try:
        assert (await store.check())["schema_version"] == len(MIGRATIONS) == 5
        assert await store.count_tasks(context_id="a") == 2
        await store.add_task(make_task("new", "b"))
        await store.save_task(make_task("old1", "b", S.INPUT_REQUIRED))  # moves context and state
        await store.save_task(make_task("new", "b", S.COMPLETED))  # the cap evicts old0
        assert await store.get_task("old0") is None
        assert await store.count_tasks(context_id="a") == 0
        assert await store.count_tasks(context_id="b") == 3
        assert await store.count_tasks(states=[S.COMPLETED, S.FAILED]) == 2
        assert (await store.check())["tasks"] == 3
    finally:
        await store.close()
    assert counters(db) == recounted(db)
    assert ("a", "completed") not in counters(db)[1]  # an emptied context leaves no counter


async def test_a_write_rolled_back_in_a_batch_leaves_the_counters_as_they_were(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    try:
        await store.add_task(make_task("kept"))

        def move_then_fail() -> None:
            store._db().execute("UPDATE tasks SET state = 'working', context_id = 'x' WHERE task_id = 'kept'")
            raise RuntimeError("failed midway")

        outcomes = await asyncio.gather(store.add_task(make_task("one", "c")), store._run(move_then_fail),
                                        store.save_task(make_task("one", "c", S.COMPLETED)),
                                        return_exceptions=True)
        assert isinstance(outcomes[1], RuntimeError), outcomes
        assert await store.count_tasks(context_id="x") == 0
        assert await store.count_tasks(states=[S.SUBMITTED]) == 1
    finally:
        await store.close()
    assert counters(tmp_path / DB_FILENAME) == recounted(tmp_path / DB_FILENAME)
