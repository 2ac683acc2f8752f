"""WAL checkpoints of the SQLite store (``infra/store/sqlite_checkpoint.py``): commits
never copy the WAL back themselves; a thread of its own does, while writes go on."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from cleveragents.infra.store import sqlite_checkpoint
from cleveragents.infra.store.sqlite import DB_FILENAME, SqliteStore
from tests.unit.test_task_store import make_task


def wal_size(tmp_path) -> int:
    wal = tmp_path / (DB_FILENAME + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_writes_are_checkpointed_off_the_store_thread_and_stay_stored(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_checkpoint, "CHECKPOINT_EVERY", 20)
    store = SqliteStore.open_in(tmp_path)
    statements: list[str] = []
    store._executor.submit(store._db().set_trace_callback, statements.append).result()
    checkpoints: list[tuple[int, int, int]] = []
    run = sqlite_checkpoint.WalCheckpointer._checkpoint

    def counted(self):
        run(self)
        checkpoints.append(self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())

    monkeypatch.setattr(sqlite_checkpoint.WalCheckpointer, "_checkpoint", counted)
    checkpointer = store._checkpointer
    assert checkpointer is not None

    async def write_until(count: int, start: int) -> int:
        n = start
        while len(checkpoints) < count:
            assert n < start + 2500, f"{len(checkpoints)} checkpoints"
            assert await store.add_task(make_task(f"t{n:03d}", metadata={"pad": "x" * 2000}))  # a commit each
            n += 1
            # A checkpoint this commit started ends before the next commit: a commit
            # landing during ``counted``'s reading would leave pages it did not copy.
            await asyncio.to_thread(checkpointer._executor.submit(lambda: None).result)
        return n

    # After every 20 commits.
    written = await write_until(2, await write_until(1, 0))
    assert not any("checkpoint" in s.lower() for s in statements)  # none on the store's connection
    busy, wal_pages, copied = checkpoints[-1]
    assert busy == 0 and copied == wal_pages  # it kept up: the whole WAL was copied back
    auto = store._executor.submit(lambda: store._db().execute("PRAGMA wal_autocheckpoint").fetchone()[0]).result()
    assert auto == sqlite_checkpoint.SAFETY_NET_PAGES
    await store.close()
    assert wal_size(tmp_path) == 0  # closing copies the rest back and empties the WAL
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        assert raw.execute("SELECT COUNT(*) FROM tasks").fetchone() == (written,)
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_a_failing_checkpoint_is_logged_and_writes_go_on(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(sqlite_checkpoint, "CHECKPOINT_EVERY", 5)
    store = SqliteStore.open_in(tmp_path)
    checkpointer = store._checkpointer
    assert checkpointer is not None
    checkpointer._path = str(tmp_path / "missing" / "no.db")  # its connection can't open
    for n in range(12):
        assert await store.add_task(make_task(f"t{n:02d}"))
    await asyncio.to_thread(checkpointer._executor.submit(lambda: None).result)
    assert "WAL checkpoint failed" in caplog.text
    assert await store.count_tasks() == 12
    await store.close()


@pytest.mark.parametrize("closes", [1, 2])
async def test_closing_twice_is_closing_once(tmp_path, closes):
    store = SqliteStore.open_in(tmp_path)
    await store.add_task(make_task("t1"))
    for _ in range(closes):
        await store.close()
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:
        assert raw.execute("SELECT COUNT(*) FROM tasks").fetchone() == (1,)
