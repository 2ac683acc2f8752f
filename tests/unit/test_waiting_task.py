"""The task a context's next message continues: found through an index, on both stores,
and on a database created before that index existed."""

import json
import random
import sqlite3
from dataclasses import replace

import pytest

from cleveragents.domain.task import INTERRUPTED_STATES, Task, TaskState, TaskStatus
from cleveragents.infra.store.sqlite import DB_FILENAME, MIGRATIONS, SqliteStore
from cleveragents.infra.store.sqlite_tasks import WAITING_SQL
from tests.store_kinds import STORE_KINDS, open_store

S = TaskState


def make_task(task_id, context_id="ctx", state=S.SUBMITTED, second=0):
    return Task(task_id, context_id, TaskStatus(state, f"2026-01-01T00:00:{second % 60:02d}.000Z"))


def moved(task, state, second=1):
    return replace(task, status=TaskStatus(state, f"2026-01-01T00:01:{second % 60:02d}.000Z"))


@pytest.fixture(params=STORE_KINDS)
async def store(request, tmp_path):
    opened = open_store(request.param, request, tmp_path, terminal_cap=8)
    yield opened
    await opened.close()


async def test_the_waiting_task_is_found_until_it_moves_on(store):
    for i in range(20):
        await store.add_task(make_task(f"done{i}", state=S.COMPLETED))
    await store.add_task(make_task("other", "elsewhere", S.INPUT_REQUIRED))
    assert await store.waiting_task("ctx") is None
    assert await store.waiting_task("nobody") is None

    asking = make_task("asking")
    await store.add_task(asking)
    assert await store.waiting_task("ctx") is None  # submitted: not waiting
    await store.save_task(moved(asking, S.INPUT_REQUIRED))
    assert (await store.waiting_task("ctx")).id == "asking"
    assert (await store.waiting_task("elsewhere")).id == "other"

    await store.save_task(moved(asking, S.WORKING, 2))  # answered: no longer waiting
    assert await store.waiting_task("ctx") is None
    await store.save_task(moved(asking, S.AUTH_REQUIRED, 3))
    assert (await store.waiting_task("ctx")).state is S.AUTH_REQUIRED
    await store.save_task(moved(asking, S.COMPLETED, 4))
    assert await store.waiting_task("ctx") is None
    assert (await store.waiting_task("elsewhere")).id == "other"


async def test_the_newest_waiting_task_of_the_context_wins(store):
    await store.add_task(make_task("older", state=S.INPUT_REQUIRED))
    await store.add_task(make_task("newer", state=S.AUTH_REQUIRED))
    assert (await store.waiting_task("ctx")).id == "newer"
    await store.save_task(moved(make_task("newer"), S.CANCELED))
    assert (await store.waiting_task("ctx")).id == "older"


async def test_a_random_history_matches_a_scan_of_the_context(store):
    rng = random.Random(11)
    tasks: dict[str, Task] = {}
    for step in range(300):
        live = [t for t in tasks.values() if not t.terminal]
        if live and rng.random() < 0.6:
            task = moved(rng.choice(live), rng.choice(list(S)), step)
            await store.save_task(task)
        else:
            task = make_task(f"t{step:03d}", f"c{rng.randrange(3)}", rng.choice([S.SUBMITTED, S.INPUT_REQUIRED]), step)
            await store.add_task(task)
        tasks[task.id] = task
        for context_id in ("c0", "c1", "c2"):
            scan = await store.list_tasks(context_id=context_id, states=INTERRUPTED_STATES, limit=1)
            found = await store.waiting_task(context_id)
            assert (found.id if found else None) == (scan[0][1].id if scan else None), (step, context_id)


async def test_sqlite_reads_only_the_waiting_index(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    try:
        plan = await store._run(lambda: store._db().execute(f"EXPLAIN QUERY PLAN {WAITING_SQL}",
                                                            ("ctx", 2**62, 1)).fetchall())
        assert [row[3] for row in plan] == ["SEARCH tasks USING INDEX tasks_waiting (context_id=? AND seq<?)"]
    finally:
        await store.close()


def old_layout_database(path):
    """A database as the schema before the waiting index left it, with tasks in it."""
    with sqlite3.connect(path) as raw:
        for version, script in enumerate(MIGRATIONS[:3], start=1):
            raw.executescript(script)
            raw.execute(f"PRAGMA user_version = {version}")
        for task in (make_task("done", state=S.COMPLETED), make_task("asking", state=S.INPUT_REQUIRED),
                     make_task("busy", state=S.WORKING)):
            raw.execute("INSERT INTO tasks (task_id, context_id, state, status_at, terminal_seq, body) "
                        "VALUES (?, ?, ?, NULL, ?, ?)", (task.id, task.context_id, task.state.value,
                                                         1 if task.terminal else None, json.dumps(task.to_dict())))
            raw.execute("INSERT INTO task_state_counts VALUES (?, 1)", (task.state.value,))
            raw.execute("INSERT INTO task_context_counts VALUES (?, ?, 1)", (task.context_id, task.state.value))
    raw.close()


async def test_a_database_from_before_the_waiting_index_is_migrated(tmp_path):
    old_layout_database(tmp_path / DB_FILENAME)
    store = SqliteStore.open_in(tmp_path)
    try:
        assert (await store.check())["schema_version"] == len(MIGRATIONS) == 5
        assert (await store.waiting_task("ctx")).id == "asking"  # indexed when the index was made
        await store.save_task(moved(make_task("asking"), S.WORKING))
        assert await store.waiting_task("ctx") is None
        await store.save_task(moved(make_task("busy"), S.INPUT_REQUIRED))
        assert (await store.waiting_task("ctx")).id == "busy"
        assert [t.id for _, t in await store.list_tasks(limit=5)] == ["busy", "asking", "done"]
    finally:
        await store.close()
