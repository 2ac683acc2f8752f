"""The PostgreSQL store: every repository on one database, for servers that outgrow one
process or one machine (several ``agents serve --http`` replicas on one database).

Chosen with ``--store postgresql://...`` (or ``CLEVERAGENTS_STORE``): docs/deploy.md.
The pool opens on first use, or at the server's start (``open``), which also applies
the schema's migrations (``postgres_schema.py``). Each call returns after its commit.
The task event logs are kept in process memory, as with SQLite, and written behind
for the other replicas (``postgres_events.py``).
"""

from __future__ import annotations

import logging
import time

import psycopg

from cleveragents.infra.store._pg import DEFAULT_POOL_SIZE, Connection, Database, redacted
from cleveragents.infra.store.postgres_events import PostgresEventLogs
from cleveragents.infra.store.postgres_plans import PostgresPins, PostgresPlans
from cleveragents.infra.store.postgres_schema import MIGRATIONS, RUNNER_LOCK_CLASS, migrate, schema_version
from cleveragents.infra.store.postgres_sessions import PostgresSessions
from cleveragents.infra.store.postgres_signals import PostgresPeers
from cleveragents.infra.store.postgres_tasks import PostgresPushConfigs, PostgresTasks
from cleveragents.infra.store.records import RecordReader
from cleveragents.infra.store.sqlite_tasks import DEFAULT_TERMINAL_CAP
from cleveragents.infra.store.whole import WholeStore

logger = logging.getLogger(__name__)

URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(store: str | None) -> bool:
    return bool(store) and str(store).startswith(URL_SCHEMES)


class PostgresStore(WholeStore):
    backend = "postgresql"

    def __init__(self, url: str, *, terminal_cap: int = DEFAULT_TERMINAL_CAP, pool_size: int = DEFAULT_POOL_SIZE):
        if not is_postgres_url(url):
            raise ValueError(f"not a PostgreSQL URL (postgresql://user@host/db): {redacted(url)}")
        self.db = Database(url, pool_size=pool_size, prepare=self._prepare)
        self.records = RecordReader()
        self.sessions = PostgresSessions(self.db, self.records)
        self.tasks = PostgresTasks(self.db, self.records, terminal_cap=terminal_cap)
        self.push_configs = PostgresPushConfigs(self.db, self.records)
        self.plans = PostgresPlans(self.db, self.records)
        self.pins = PostgresPins(self.db, self.records)
        self.events = PostgresEventLogs(self.db)  # in memory, and written behind for the other replicas
        self._runner_conn: Connection | None = None
        self.peers = PostgresPeers(self.db)  # cancels and events across replicas (LISTEN/NOTIFY)
        self.peers.on_events(self.events.notified)
        self._expose(self.sessions, self.tasks, self.push_configs, self.plans, self.pins, self.events)

    async def _prepare(self, conn: Connection) -> None:
        await migrate(conn)
        # This replica's id, and the lock that shows it alive for as long as its own
        # connection lasts (outside the pool, which would recycle it).
        self._runner_conn = await psycopg.AsyncConnection.connect(self.db.url, autocommit=True)
        cur = await self._runner_conn.execute("SELECT nextval('task_runners')::integer")
        row = await cur.fetchone()
        assert row is not None
        await self._runner_conn.execute("SELECT pg_advisory_lock(%s, %s)", (RUNNER_LOCK_CLASS, row[0]))
        self.tasks.runner = self.plans.runner = row[0]
        await self.peers.listen(self._runner_conn)

    async def open(self) -> PostgresStore:
        """Connect and migrate now (a server's start), rather than on first use."""
        await self.db.open()
        logger.info("PostgreSQL store at %s, schema %d", redacted(self.db.url), self.schema_version)
        return self

    @property
    def schema_version(self) -> int:
        return len(MIGRATIONS)

    async def close(self) -> None:
        if self.db.is_open:
            await self.events.flush()
        await self.peers.close()
        await self.db.close()
        if self._runner_conn is not None:
            conn, self._runner_conn = self._runner_conn, None
            await conn.close()

    def close_sync(self) -> None:
        """From synchronous code with no running loop: the pool's connections belong to
        a loop that has ended, and close when the process does."""

    # -- health --------------------------------------------------------------------
    def unreadable_records(self) -> list[dict[str, str]]:
        return self.records.report()

    async def ping(self) -> dict[str, object]:
        async with self.db.connection() as conn:
            await conn.execute("SELECT 1")
        return {"ok": True, "backend": self.backend, "schema_version": self.schema_version}

    async def check(self) -> dict[str, object]:
        started = time.perf_counter()
        async with self.db.connection() as conn:
            version = await schema_version(conn)
            cur = await conn.execute("SELECT pg_is_in_recovery(), current_setting('server_version')")
            row = await cur.fetchone()
            cur = await conn.execute("SELECT COUNT(*) FROM sessions")
            sessions = await cur.fetchone()
        read_only = bool(row and row[0])
        return {
            "ok": not read_only and version == self.schema_version,
            "server_version": row[1] if row else None,
            "read_only": read_only,
            "schema_version": version,
            "sessions": sessions[0] if sessions else 0,
            "tasks": await self.tasks.total(),
            "check_ms": round((time.perf_counter() - started) * 1000, 2),
        }
