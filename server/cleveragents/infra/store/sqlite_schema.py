"""The SQLite store's file: its schema, its migrations, and opening it.

Light on purpose (``sqlite3`` and nothing of the models): the stdio server opens the
file with it to answer a health check before the store's modules have loaded
(``sqlite_probe.py``); ``SqliteStore`` opens its connection the same way.
"""

from __future__ import annotations

import logging
import sqlite3

from cleveragents.infra.store._sql import transaction
from cleveragents.infra.store.shared_tables import plan_tables, sessions_table

logger = logging.getLogger("cleveragents.infra.store.sqlite")

SEQ = "INTEGER PRIMARY KEY AUTOINCREMENT"  # the auto-numbered key of a table

# Migration 5: the counters follow the rows in SQLite itself, so a write is one
# statement from Python (each statement from Python costs more than its work here).
COUNTS_MIGRATION = """
    CREATE TRIGGER tasks_counted_in AFTER INSERT ON tasks BEGIN
        INSERT INTO task_state_counts (state, n) VALUES (NEW.state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
        INSERT INTO task_context_counts (context_id, state, n) VALUES (NEW.context_id, NEW.state, 1)
            ON CONFLICT (context_id, state) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER tasks_counted_out AFTER DELETE ON tasks BEGIN
        UPDATE task_state_counts SET n = n - 1 WHERE state = OLD.state;
        UPDATE task_context_counts SET n = n - 1 WHERE context_id = OLD.context_id AND state = OLD.state;
        DELETE FROM task_context_counts WHERE context_id = OLD.context_id AND state = OLD.state AND n <= 0;
    END;
    CREATE TRIGGER tasks_counted_moved AFTER UPDATE OF context_id, state ON tasks
    WHEN OLD.state IS NOT NEW.state OR OLD.context_id IS NOT NEW.context_id BEGIN
        UPDATE task_state_counts SET n = n - 1 WHERE state = OLD.state;
        UPDATE task_context_counts SET n = n - 1 WHERE context_id = OLD.context_id AND state = OLD.state;
        DELETE FROM task_context_counts WHERE context_id = OLD.context_id AND state = OLD.state AND n <= 0;
        INSERT INTO task_state_counts (state, n) VALUES (NEW.state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
        INSERT INTO task_context_counts (context_id, state, n) VALUES (NEW.context_id, NEW.state, 1)
            ON CONFLICT (context_id, state) DO UPDATE SET n = n + 1;
    END;
"""

DB_FILENAME = "state.db"

# Each entry moves the schema one version up; never edit an applied entry.
MIGRATIONS: tuple[str, ...] = (
    sessions_table(SEQ),
    # Tasks (sqlite_tasks.py). The rowid `seq` is the creation order and the cursor;
    # `terminal_seq` is the order of becoming terminal (NULL while live), which is the
    # eviction order; `status_at` is the status timestamp as fixed-width UTC text.
    f"""
    CREATE TABLE tasks (
        seq {SEQ},
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
    plan_tables(SEQ),  # plans and what hangs off them, and context pins
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


def connect(path: str) -> sqlite3.Connection:
    """A connection to the store's file, in WAL mode, migrated (blocking). Any thread
    may use it, one at a time."""
    from cleveragents.infra.store.sqlite_checkpoint import SAFETY_NET_PAGES

    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        if path != ":memory:":
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                logger.warning("SQLite journal mode is %s, not WAL", mode)
            conn.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_NET_PAGES}")  # sqlite_checkpoint.py
        # NORMAL in WAL mode survives a killed process; only power loss may drop the
        # last commits.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(conn: sqlite3.Connection) -> None:
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
