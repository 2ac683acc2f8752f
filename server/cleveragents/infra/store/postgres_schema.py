"""The PostgreSQL store's schema, as versioned migrations, and the code that applies them.

``schema_migrations`` records each applied version. At start the store applies what is
missing, each migration in its own transaction, under an advisory lock: replicas that
start together apply each one once. A database with a newer schema than this version
knows is refused. ``agents store migrate`` runs the same step alone.

Bodies are the same JSON text the SQLite store keeps (``TEXT``, not ``jsonb``, which
would reorder keys and re-encode numbers): both stores read them with one reader.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from cleveragents.infra.store.shared_tables import plan_tables, sessions_table

logger = logging.getLogger(__name__)

# pg_advisory_lock keys: one for the migrations, one that orders terminal writes (the cap).
MIGRATION_LOCK = 0x636C6576_00000001
TERMINAL_LOCK = 0x636C6576_00000002
# pg_advisory_lock(RUNNER_LOCK_CLASS, runner id): held by each open store for its life,
# so pg_locks tells which replicas are alive (a killed one's session ends with it).
RUNNER_LOCK_CLASS = 0x636C6576
# The ids of the replicas alive now, by their locks.
LIVE_RUNNERS_SQL = ("SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    f"AND classid::bigint = {RUNNER_LOCK_CLASS} AND objsubid = 2 AND database = "
                    "(SELECT oid FROM pg_database WHERE datname = current_database())")
SEQ = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"  # the auto-numbered key of a table
COUNTER_SHARDS = 16  # state counter rows per state: concurrent writers rarely wait on one row

# Each entry moves the schema one version up; never edit an applied entry.
MIGRATIONS: tuple[str, ...] = (
    # 1: sessions, tasks with their counters, push configs.
    sessions_table(SEQ) + f"""
    -- `seq` is the creation order and the cursor; `terminal_seq` the order of becoming
    -- terminal (NULL while live), which is the eviction order.
    CREATE SEQUENCE tasks_terminal_order;
    CREATE TABLE tasks (
        seq {SEQ},
        task_id TEXT NOT NULL UNIQUE,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_at TIMESTAMPTZ,
        terminal_seq BIGINT UNIQUE,
        body TEXT NOT NULL
    );
    CREATE INDEX tasks_by_context ON tasks (context_id, seq);
    CREATE INDEX tasks_by_state ON tasks (state, seq);
    CREATE INDEX tasks_by_status_at ON tasks (status_at);
    CREATE INDEX tasks_waiting ON tasks (context_id, seq) WHERE state IN ('auth-required', 'input-required');

    -- Counters kept by a trigger in the writing transaction, so a count reads a few
    -- rows whatever the store holds. The per-state counter is split in shards (by
    -- backend) so that concurrent writers don't queue on one row; a count sums them.
    CREATE TABLE task_state_counts (
        state TEXT NOT NULL,
        shard SMALLINT NOT NULL,
        n BIGINT NOT NULL,
        PRIMARY KEY (state, shard)
    );
    CREATE TABLE task_context_counts (
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        n BIGINT NOT NULL,
        PRIMARY KEY (context_id, state)
    );
    CREATE FUNCTION tasks_counted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        my_shard SMALLINT := pg_backend_pid() % {COUNTER_SHARDS};
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            INSERT INTO task_state_counts AS c (state, shard, n) VALUES (OLD.state, my_shard, -1)
                ON CONFLICT (state, shard) DO UPDATE SET n = c.n - 1;
            UPDATE task_context_counts SET n = n - 1 WHERE context_id = OLD.context_id AND state = OLD.state;
            DELETE FROM task_context_counts WHERE context_id = OLD.context_id AND state = OLD.state AND n <= 0;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO task_state_counts AS c (state, shard, n) VALUES (NEW.state, my_shard, 1)
                ON CONFLICT (state, shard) DO UPDATE SET n = c.n + 1;
            INSERT INTO task_context_counts AS c (context_id, state, n) VALUES (NEW.context_id, NEW.state, 1)
                ON CONFLICT (context_id, state) DO UPDATE SET n = c.n + 1;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER tasks_counted_in AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_counted();
    CREATE TRIGGER tasks_counted_out AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_counted();
    CREATE TRIGGER tasks_counted_moved AFTER UPDATE OF context_id, state ON tasks FOR EACH ROW
        WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.context_id IS DISTINCT FROM NEW.context_id)
        EXECUTE FUNCTION tasks_counted();

    CREATE TABLE push_configs (
        seq {SEQ},
        task_id TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
        config_id TEXT NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (task_id, config_id)
    );
    """,
    # 2: plans and what hangs off them, and context pins.
    plan_tables(SEQ),
    # 3: which replica runs a live task, so that one starting up repairs only the tasks
    # of replicas that are gone (``PostgresTasks.live_tasks``).
    """
    CREATE SEQUENCE task_runners AS INTEGER;
    ALTER TABLE tasks ADD COLUMN runner INTEGER;
    """,
    # 4: the events of running tasks, from which another replica resumes a stream
    # (``postgres_events.py``); they go with their task.
    """
    CREATE TABLE task_events (
        task_id TEXT NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
        event_id TEXT COLLATE "C" NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (task_id, event_id)
    );
    """,
    # 5: which replica last wrote a plan, so that one starting up interrupts only the
    # running plans of replicas that are gone (``PostgresPlans.plans_in_states``).
    """
    ALTER TABLE plans ADD COLUMN runner INTEGER;
    """,
)


async def schema_version(conn: psycopg.AsyncConnection[Any]) -> int:
    cur = await conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return 0
    cur = await conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: psycopg.AsyncConnection[Any]) -> int:
    """Apply the missing migrations (``conn`` in autocommit mode); the version now."""
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                           "version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        version = await schema_version(conn)
        if version > len(MIGRATIONS):
            raise RuntimeError(f"the PostgreSQL database has schema {version}, newer than this version knows "
                               f"({len(MIGRATIONS)}); upgrade cleveragents")
        for target, script in enumerate(MIGRATIONS[version:], start=version + 1):
            async with conn.transaction():
                await conn.execute(script)
                await conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (target,))
            logger.info("PostgreSQL store: schema migrated to version %d", target)
        return len(MIGRATIONS)
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
