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

from cleveragents.infra.store._sql import transaction
from cleveragents.infra.store.memory_events import MemoryEventLogs
from cleveragents.infra.store.records import RecordReader
from cleveragents.infra.store.sqlite_batch import GroupCommit
from cleveragents.infra.store.sqlite_checkpoint import SAFETY_NET_PAGES, WalCheckpointer
from cleveragents.infra.store.sqlite_plans import PLANS_MIGRATION, SqlitePins, SqlitePlans
from cleveragents.infra.store.sqlite_sessions import SqliteSessions
from cleveragents.infra.store.sqlite_tasks import (
    COUNTS_MIGRATION,
    DEFAULT_TERMINAL_CAP,
    SqlitePushConfigs,
    SqliteTasks,
    task_total,
)
from cleveragents.infra.store.whole import WholeStore

logger = logging.getLogger(__name__)
T = TypeVar("T")

DB_FILENAME = "state.db"

# Each entry moves the schema one version up; never edit an applied entry.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL UNIQUE,
        actor_name TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        closed_at TEXT,
        metadata TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX sessions_by_status ON sessions (status, seq);
    """,
    # Tasks (sqlite_tasks.py). The rowid `seq` is the creation order and the cursor;
    # `terminal_seq` is the order of becoming terminal (NULL while live), which is the
    # eviction order; `status_at` is the status timestamp as fixed-width UTC text.
    """
    CREATE TABLE tasks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL UNIQUE,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_at TEXT,
        terminal_seq INTEGER UNIQUE,
        body TEXT NOT NULL
    );
    CREATE INDEX tasks_by_context ON tasks (context_id, seq);
    CREATE INDEX tasks_by_state ON tasks (state, seq);
    CREATE INDEX tasks_by_status_at ON tasks (status_at);
    CREATE TABLE task_state_counts (
        state TEXT PRIMARY KEY,
        n INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE task_context_counts (
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (context_id, state)
    ) WITHOUT ROWID;
    CREATE TABLE push_configs (
        task_id TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
        config_id TEXT NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (task_id, config_id)
    );
    """,
    PLANS_MIGRATION,
    # The tasks waiting for input, per context (SqliteTasks.waiting_task): a send into a
    # context finds the one it continues without reading the context's other tasks. Its
    # WHERE is sqlite_tasks.WAITING_STATES_SQL, which a query must repeat word for word.
    """
    CREATE INDEX tasks_waiting ON tasks (context_id, seq) WHERE state IN ('auth-required', 'input-required');
    """,
    # The task counters kept by triggers (sqlite_tasks.py); the rows stay as they are.
    COUNTS_MIGRATION,
)


def statements(script: str) -> list[str]:
    """The statements of a script; a trigger's body has semicolons of its own."""
    found, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                found.append(pending)
            pending = ""
    return found


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
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        if self.path != ":memory:":
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                logger.warning("SQLite journal mode is %s, not WAL", mode)
            conn.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_NET_PAGES}")  # sqlite_checkpoint.py
        # NORMAL in WAL mode survives a killed process; only power loss may drop the
        # last commits.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        self._migrate(conn)
        self._conn = conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise RuntimeError(
                f"the state database has schema {version}, newer than this version knows "
                f"({len(MIGRATIONS)}); upgrade cleveragents"
            )
        for target, script in enumerate(MIGRATIONS[version:], start=version + 1):
            with transaction(conn):
                for statement in statements(script):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {target}")

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
        if not ran:
            await self._run(select_one)
        return {"ok": True, "backend": self.backend, "schema_version": self.schema_version}

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
