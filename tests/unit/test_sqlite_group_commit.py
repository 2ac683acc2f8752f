"""Group commit in the SQLite store (``infra/store/sqlite_batch.py``): operations
waiting together share one transaction, one failing is rolled back alone, and an
answered write is a stored one, even when the database fills up mid-batch."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from cleveragents.domain.task import TaskState as S
from cleveragents.infra.store import sqlite as sqlite_store
from cleveragents.infra.store.sqlite import DB_FILENAME, SqliteStore
from tests.unit.test_task_store import finished, make_task

CONCURRENT = 200


@pytest.fixture
async def store(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    yield store
    await store.close()


def count_begins(store: SqliteStore) -> list[str]:
    statements: list[str] = []
    store._executor.submit(store._db().set_trace_callback, statements.append).result()
    return statements


async def test_concurrent_writes_share_transactions_and_all_land(store, tmp_path):
    statements = count_begins(store)
    tasks = [make_task(f"t{n:03d}", f"ctx{n % 7}") for n in range(CONCURRENT)]
    assert all(await asyncio.gather(*(store.add_task(task) for task in tasks)))
    await asyncio.gather(*(store.save_task(finished(task, S.COMPLETED, second=n)) for n, task in enumerate(tasks)))
    begins = sum(s == "BEGIN IMMEDIATE" for s in statements)
    assert begins < CONCURRENT / 4, f"{begins} transactions for {2 * CONCURRENT} writes"
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:  # committed: another connection sees them
        assert raw.execute("SELECT COUNT(*) FROM tasks WHERE state = 'completed'").fetchone() == (CONCURRENT,)
    assert await store.count_tasks(context_id="ctx3") == len([n for n in range(CONCURRENT) if n % 7 == 3])


async def test_a_failing_operation_is_rolled_back_alone(store):
    await store.add_task(make_task("kept"))

    def half_then_fail() -> None:
        store._db().execute("UPDATE tasks SET state = 'half-done' WHERE task_id = 'kept'")
        raise RuntimeError("failed midway")

    outcomes = await asyncio.gather(
        store.add_task(make_task("before")), store._run(half_then_fail), store.save_task(make_task("missing")),
        store.add_task(make_task("after")), return_exceptions=True)
    assert outcomes[0] is True and outcomes[3] is True, outcomes
    assert isinstance(outcomes[1], RuntimeError) and isinstance(outcomes[2], KeyError), outcomes
    assert (await store.get_task("kept")).state is S.SUBMITTED  # its half write was undone
    assert {t.id for _, t in await store.list_tasks(limit=10)} == {"kept", "before", "after"}


async def test_a_caller_cancelled_before_its_batch_starts_skips_its_write_only(store):
    gate = threading.Event()
    store._executor.submit(gate.wait)  # the store's thread is busy: the writes queue
    writes = [asyncio.ensure_future(store.add_task(make_task(f"w{n}"))) for n in range(20)]
    await asyncio.sleep(0)
    writes[5].cancel()
    gate.set()
    await asyncio.gather(*writes, return_exceptions=True)
    assert writes[5].cancelled() and all(w.result() is True for n, w in enumerate(writes) if n != 5)
    assert await store.get_task("w5") is None and await store.count_tasks() == 19


async def test_a_database_that_fills_up_mid_batch_fails_exactly_the_unstored_writes(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    page_count = store._executor.submit(lambda: store._db().execute("PRAGMA page_count").fetchone()[0]).result()
    # A few pages of room: some of the batch fits, the rest meets a full database.
    store._executor.submit(lambda: store._db().execute(f"PRAGMA max_page_count = {page_count + 6}")).result()
    body = "x" * 1500
    outcomes = await asyncio.gather(
        *(store.add_task(make_task(f"t{n:03d}", metadata={"pad": body})) for n in range(CONCURRENT)),
        return_exceptions=True)
    stored = {f"t{n:03d}" for n, outcome in enumerate(outcomes) if outcome is True}
    failed = [outcome for outcome in outcomes if outcome is not True]
    assert stored and failed, "the room left was meant to fit some writes, not all"
    assert all(isinstance(exc, sqlite3.OperationalError) and "full" in str(exc) for exc in failed), failed[:3]
    await store.close()
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert {row[0] for row in raw.execute("SELECT task_id FROM tasks")} == stored
        assert raw.execute("SELECT SUM(n) FROM task_state_counts").fetchone() == (len(stored),)


async def test_a_ping_runs_at_once_when_idle_and_never_waits_behind_a_batch(store, monkeypatch):
    threads: list[int] = []
    store._batches.run_now_if_idle(lambda: threads.append(threading.get_ident()))
    assert threads == [threading.get_ident()]  # idle: on the caller's thread, no hop
    assert (await store.ping())["ok"] is True

    gate = threading.Event()
    running = threading.Event()

    def long_write() -> None:
        running.set()
        gate.wait()
        store._db().execute("UPDATE tasks SET state = state")

    write = asyncio.ensure_future(store._run(long_write))
    try:
        await asyncio.to_thread(running.wait)  # the batch holds the connection
        assert store._batches.run_now_if_idle(lambda: threads.append(0)) == (False, None)
        # At work: answered at once, without touching the connection the batch holds.
        answer = await asyncio.wait_for(store.ping(), 0.5)
        assert answer["ok"] is True and 0 not in threads
        # A batch that runs on past the limit is a stuck store.
        monkeypatch.setattr(sqlite_store, "STUCK_SECONDS", 0.05)
        await asyncio.sleep(0.1)
        stuck = await asyncio.wait_for(store.ping(), 0.5)
        assert stuck["ok"] is False and "has run for" in stuck["error"], stuck
    finally:
        gate.set()
        await write
    assert (await store.ping()) == {"ok": True, "backend": "sqlite", "schema_version": store.schema_version}
