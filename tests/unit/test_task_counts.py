"""The SQLite task counters, kept by triggers since schema 5: right on a database that
counted in Python before, through inserts, moves, evictions and rollbacks. And the
eviction a group commit runs once for all its writes, never letting a read or a commit
see more than the cap."""

import asyncio
import json
import sqlite3
import threading

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.task import PushConfig, Task, TaskState, TaskStatus
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


async def queued_together(store, *calls):
    """The calls, queued while the store's thread is busy: they run as one batch."""
    gate = threading.Event()
    store._executor.submit(gate.wait)
    futures = [asyncio.ensure_future(call) for call in calls]
    await asyncio.sleep(0)
    gate.set()
    return await asyncio.gather(*futures, return_exceptions=True)


async def test_a_batch_evicts_once_yet_no_read_or_commit_holds_more_than_the_cap(tmp_path):
    store = SqliteStore.open_in(tmp_path, terminal_cap=3)
    try:
        for n in range(8):
            await store.add_task(make_task(f"t{n}", f"c{n % 2}"))
        await store.put_push_config(PushConfig("p0", "t0", "https://hook.example/x"))
        statements = []
        store._executor.submit(store._db().set_trace_callback, statements.append).result()
        outcomes = await queued_together(
            store,
            *(store.save_task(make_task(f"t{n}", f"c{n % 2}", S.COMPLETED, second=n)) for n in range(5)),
            store.count_tasks(states=[S.COMPLETED]),  # read in the batch: the cap holds already
            store.get_push_config("t0", "p0"),  # t0 was the first to finish: gone with its configs
            store.put_push_config(PushConfig("p1", "t1", "https://hook.example/x")),
            *(store.save_task(make_task(f"t{n}", f"c{n % 2}", S.FAILED, second=n)) for n in range(5, 7)),
        )
        store._executor.submit(store._db().set_trace_callback, None).result()
        assert outcomes[5:7] == [3, None] and isinstance(outcomes[7], KeyError), outcomes
        assert sum(s.startswith("BEGIN") for s in statements) == 1, "not one batch"
        # Once when the read needed it, once before the commit: not once per write.
        assert sum("ORDER BY terminal_seq" in s for s in statements) == 2, statements
        assert [t.id for _, t in await store.list_tasks(states=[S.COMPLETED, S.FAILED], limit=9)] == [
            "t6", "t5", "t4"]
        assert await store.count_tasks() == 4 and {t.id for t in await store.live_tasks()} == {"t7"}
    finally:
        await store.close()
    assert counters(tmp_path / DB_FILENAME) == recounted(tmp_path / DB_FILENAME)


async def test_a_read_that_fails_in_a_batch_leaves_the_eviction_due(tmp_path):
    store = SqliteStore.open_in(tmp_path, terminal_cap=1)
    try:
        await store.add_task(make_task("bad"))
        await store._run(lambda: store._db().execute("UPDATE tasks SET body = 'x' WHERE task_id = 'bad'"))
        await store.add_task(make_task("a"))
        outcomes = await queued_together(
            store, store.save_task(make_task("a", state=S.COMPLETED)),
            store.add_task(make_task("b", state=S.COMPLETED)),
            store.get_task("bad"))  # evicts a, then fails: its rollback brings a back
        assert isinstance(outcomes[2], UnreadableRecordError), outcomes
        assert await store.get_task("a") is None and (await store.get_task("b")).state is S.COMPLETED
        assert await store.count_tasks(states=[S.COMPLETED]) == 1
    finally:
        await store.close()
