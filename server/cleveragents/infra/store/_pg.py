"""What every PostgreSQL store module shares: the connection pool, the transaction and
the base of the repositories.

The pool's connections are in autocommit mode: a read, or a write that is one
statement, costs one round trip, and is committed when ``execute`` returns. A write of
several statements runs in ``transaction()``; either way a call returns only after its
commit. psycopg is imported here, so only by a store configured with a
``postgresql://`` URL.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool

from cleveragents.domain.errors import ValidationError
from cleveragents.infra.store.records import RecordReader

logger = logging.getLogger(__name__)
T = TypeVar("T")

Connection = psycopg.AsyncConnection[Any]

OPEN_TIMEOUT = 30.0  # seconds to reach the server at start
DEFAULT_POOL_SIZE = 10


def redacted(url: str) -> str:
    """The URL without its password, for logs and errors."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparsable PostgreSQL URL>"
    host, port, dbname = info.get("host", ""), info.get("port", ""), info.get("dbname", "")
    return f"postgresql://{info.get('user', '')}@{host}{':' + str(port) if port else ''}/{dbname}"


class Database:
    """The pool, opened on first use (or by ``open``), and ``prepare`` run once on the
    first connection (the migrations)."""

    def __init__(self, url: str, *, pool_size: int = DEFAULT_POOL_SIZE,
                 prepare: Callable[[Connection], Awaitable[None]] | None = None):
        self.url = url
        self._pool_size = pool_size
        self._prepare = prepare
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False

    async def open(self) -> None:
        if self._pool is not None:
            return
        if self._closed:
            raise RuntimeError("the store is closed")
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is not None:
                return
            # One connection first: a server that is down or refuses us fails here at
            # once, with its reason (a pool would retry until its timeout).
            try:
                first = await psycopg.AsyncConnection.connect(self.url, autocommit=True,
                                                              connect_timeout=int(OPEN_TIMEOUT))
            except psycopg.Error as exc:
                reason = " ".join(str(exc).split())  # libpq's message spans lines: one line here
                raise RuntimeError(f"can't open the PostgreSQL store at {redacted(self.url)}: {reason}") from None
            try:
                if self._prepare is not None:
                    await self._prepare(first)
            finally:
                await first.close()
            pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
                self.url, min_size=1, max_size=self._pool_size, open=False, name="cleveragents-store",
                kwargs={"autocommit": True}, timeout=OPEN_TIMEOUT)
            try:
                await pool.open(wait=True, timeout=OPEN_TIMEOUT)
            except BaseException:
                await pool.close()
                raise
            self._pool = pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        if self._pool is None:
            await self.open()
        assert self._pool is not None
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.DataError as exc:
            if "NUL" in str(exc):  # PostgreSQL text can't hold U+0000: a client's id, say
                raise ValidationError("text holding a NUL character (U+0000) can't be stored",
                                      {"reason": "nul_character"}) from None
            raise

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A connection in a transaction, committed when the block ends."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    async def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    @property
    def is_open(self) -> bool:
        return self._pool is not None


class PgRepository:
    """One concern's calls on the store's pool, sharing its record reader."""

    def __init__(self, db: Database, records: RecordReader):
        self._db = db
        self.records = records

    async def _one(self, sql: str, args: Any = ()) -> tuple[Any, ...] | None:
        async with self._db.connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchone()

    async def _all(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        async with self._db.connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchall()

    async def _rowcount(self, sql: str, args: Any = ()) -> int:
        async with self._db.connection() as conn:
            cur = await conn.execute(sql, args)
            return cur.rowcount
