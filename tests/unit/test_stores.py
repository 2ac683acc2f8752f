"""One contract for every store: the SQLite file, the in-memory store and PostgreSQL."""

import sqlite3

import pytest

from cleveragents.domain.session import Session
from cleveragents.infra.store.sqlite import DB_FILENAME, SqliteStore
from tests.store_kinds import STORE_KINDS, open_store


def make_session(session_id, status="active"):
    return Session(session_id, "local/default", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z",
                   status, None, {"k": [1, 2]})


@pytest.fixture(params=STORE_KINDS)
async def store(request, tmp_path):
    store = open_store(request.param, request, tmp_path / "state")
    yield store
    await store.close()


async def test_add_get_save(store):
    assert await store.add_session(make_session("a")) is True
    assert await store.add_session(make_session("a")) is False
    got = await store.get_session("a")
    assert got == make_session("a")
    closed = got.closed("2026-01-02T00:00:00.000Z")
    await store.save_session(closed)
    assert (await store.get_session("a")).status == "closed"
    assert await store.get_session("missing") is None


async def test_delete_removes_the_record_once(store):
    await store.add_session(make_session("a"))
    await store.add_session(make_session("b"))
    assert await store.delete_session("a") is True
    assert await store.delete_session("a") is False
    assert await store.get_session("a") is None and await store.count_sessions() == 1
    assert [s.session_id for _, s in await store.list_sessions(None, 10, None)] == ["b"]


async def test_list_newest_first_with_positions(store):
    for name in "abcde":
        await store.add_session(make_session(name, "closed" if name in "bd" else "active"))
    rows = await store.list_sessions(None, 2, None)
    assert [s.session_id for _, s in rows] == ["e", "d"]
    rest = await store.list_sessions(None, 10, rows[-1][0])
    assert [s.session_id for _, s in rest] == ["c", "b", "a"]
    assert [s.session_id for _, s in await store.list_sessions("closed", 10, None)] == ["d", "b"]
    assert await store.count_sessions() == 5 and await store.count_sessions("active") == 3


async def test_health(store):
    assert (await store.ping())["ok"] is True
    assert (await store.check())["ok"] is True


async def test_health_checks_run_beside_other_work(store):
    """Two checks (``_cleveragents/diagnostics/run`` twice at once) share the SQLite
    store's batch, and so its transaction: each must still report ok."""
    import asyncio

    results = await asyncio.gather(store.check(), store.check(), store.add_session(make_session("x")))
    assert [r["ok"] for r in results[:2]] == [True, True] and results[2] is True


async def test_sqlite_is_wal_and_survives_reopening(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    await store.add_session(make_session("kept"))
    await store.close()
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == store.schema_version
    again = SqliteStore.open_in(tmp_path)
    try:
        assert (await again.get_session("kept")).metadata == {"k": [1, 2]}
    finally:
        await again.close()


async def test_sqlite_refuses_a_newer_schema(tmp_path):
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="newer than this version"):
        SqliteStore.open_in(tmp_path)


async def test_sqlite_work_runs_off_the_event_loop(tmp_path):
    import threading

    store = SqliteStore.open_in(tmp_path)
    try:
        thread = await store._run(lambda: threading.current_thread().name)
        assert thread.startswith("cleveragents-store") and thread != threading.current_thread().name
    finally:
        await store.close()
