"""The default store: one SQLite file in WAL mode, used from one worker thread.

All SQL runs on a dedicated single-thread executor, so the event loop never blocks on
the disk and the connection is never shared between threads at once. Operations that
wait for that thread together run together, in one transaction (``sqlite_batch``).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from cleveragents.infra.store.memory_events import MemoryEventLogs
from cleveragents.infra.store.records import RecordReader
from cleveragents.infra.store.sqlite_batch import GroupCommit
from cleveragents.infra.store.sqlite_checkpoint import WalCheckpointer
from cleveragents.infra.store.sqlite_plans import SqlitePins, SqlitePlans
from cleveragents.infra.store.sqlite_schema import DB_FILENAME, MIGRATIONS, connect, statements
from cleveragents.infra.store.sqlite_sessions import SqliteSessions
from cleveragents.infra.store.sqlite_tasks import (
    DEFAULT_TERMINAL_CAP,
    SqlitePushConfigs,
    SqliteTasks,
    task_total,
)
from cleveragents.infra.store.whole import WholeStore

logger = logging.getLogger(__name__)
T = TypeVar("T")
# A write batch running longer than this makes the health check report the store stuck.
STUCK_SECONDS = 30.0

__all__ = ["DB_FILENAME", "MIGRATIONS", "SqliteStore", "statements"]


class SqliteStore(WholeStore):
    """The SQLite file: its connection, the thread that uses it, and its health. Each
    concern is a repository on that one connection (``sessions``, ``tasks``,
    ``push_configs``, ``plans``, ``pins``), so writes of every kind share one group
    commit and one file; the task event logs (``events``) stay in memory."""

    backend = "sqlite"

    def __init__(self, path: Path | str, *, terminal_cap: int = DEFAULT_TERMINAL_CAP):
        self.path = str(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cleveragents-store")
        self._conn: sqlite3.Connection | None = None
        self._batches = GroupCommit(self._executor, self._db)
        self.records = RecordReader()
        self.sessions = SqliteSessions(self._run, self._db, self.records)
        self.tasks = SqliteTasks(self._run, self._db, self.records, terminal_cap=terminal_cap)
        self.push_configs = SqlitePushConfigs(self._run, self._db, self.records, self.tasks)
        self._batches.before_commit.append(self.tasks.catch_up)
        # A file's WAL is copied back by a thread of its own, not inside a commit.
        self._checkpointer = WalCheckpointer(self.path) if self.path != ":memory:" else None
        if self._checkpointer is not None:
            self._batches.after_batch.append(self._checkpointer.written)
        self.plans = SqlitePlans(self._run, self._db, self.records)
        self.pins = SqlitePins(self._run, self._db, self.records)
        self.events = MemoryEventLogs()  # in process memory: memory_events.py says why
        self._expose(self.sessions, self.tasks, self.push_configs, self.plans, self.pins, self.events)

    # -- lifecycle -----------------------------------------------------------------
    @classmethod
    def open_in(cls, state_dir: Path, *, terminal_cap: int = DEFAULT_TERMINAL_CAP) -> SqliteStore:
        """Open (creating) ``state_dir/state.db``; blocking, for the composition root."""
        state_dir.mkdir(parents=True, exist_ok=True)
        store = cls(state_dir / DB_FILENAME, terminal_cap=terminal_cap)
        store._executor.submit(store._connect).result()
        return store

    def _connect(self) -> None:
        self._conn = connect(self.path)

    @property
    def schema_version(self) -> int:
        return len(MIGRATIONS)

    async def close(self) -> None:
        if self._conn is None:
            return
        # Alone, after what is queued: a checkpoint can't run inside a batch's transaction.
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close_sync)
        self._executor.shutdown(wait=True)

    def _close_sync(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._batches.in_use:
            self._close_connection()

    def _close_connection(self) -> None:
        assert self._conn is not None
        try:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            self._conn.close()
            self._conn = None

    def close_sync(self) -> None:
        """Close from synchronous code with no running loop (tests, CLI teardown)."""
        if self._conn is not None:
            self._executor.submit(self._close_sync).result()
        self._executor.shutdown(wait=True)

    # -- plumbing ------------------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the store's thread, grouped with what else waits (``sqlite_batch``)."""
        return await self._batches.run(fn, *args)

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the store is closed")
        return self._conn

    # -- health --------------------------------------------------------------------
    def unreadable_records(self) -> list[dict[str, str]]:
        return self.records.report()

    async def ping(self) -> dict[str, object]:
        def select_one() -> Any:
            return self._db().execute("SELECT 1").fetchone()

        ran, _ = self._batches.run_now_if_idle(select_one)  # touches no file and no lock: can't block
        answer: dict[str, object] = {"ok": True, "backend": self.backend, "schema_version": self.schema_version}
        # At work, the store answers for itself: a health check must not queue behind a
        # long write (a plan's 1,000 files, hundreds of ms). One running past
        # STUCK_SECONDS is a stuck store.
        if not ran and (busy := self._batches.busy_for()) >= STUCK_SECONDS:
            return {**answer, "ok": False, "error": f"one write has run for {busy:.0f} s"}
        return answer

    async def check(self) -> dict[str, object]:
        def run() -> dict[str, object]:
            db = self._db()
            started = time.perf_counter()
            integrity = db.execute("PRAGMA quick_check").fetchone()[0]
            mode = db.execute("PRAGMA journal_mode").fetchone()[0]
            if not db.in_transaction:  # in a batch, its BEGIN IMMEDIATE proved it already
                db.execute("BEGIN IMMEDIATE")  # proves the file is writable, then undone
                db.execute("ROLLBACK")
            return {
                "ok": integrity == "ok",
                "integrity": integrity,
                "journal_mode": mode,
                "schema_version": db.execute("PRAGMA user_version").fetchone()[0],
                "sessions": db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
                "tasks": self.tasks.settled(lambda: task_total(db)),
                "check_ms": round((time.perf_counter() - started) * 1000, 2),
            }

        return await self._run(run)
