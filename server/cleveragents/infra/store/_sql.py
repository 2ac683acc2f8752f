"""What every SQLite store module shares: the write transaction, the query for a
newest-first page, and the base of the repositories."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:  # the early health probe opens the file through this module, before the store loads
    from cleveragents.infra.store.records import RecordReader

T = TypeVar("T")


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (the write lock up front, so a busy database fails here,
    not halfway), ``COMMIT`` when the block ends, ``ROLLBACK`` when it raises or the
    commit fails. The connection must be in autocommit mode (``isolation_level=None``).
    Inside a group commit's transaction (``sqlite_batch``) the block runs as it is:
    the savepoint around it makes it atomic."""
    if db.in_transaction:
        yield db
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (a full disk)
            db.execute("ROLLBACK")
        raise


def newest_first(columns: str, table: str, equal: Mapping[str, Any], before: int | None,
                 limit: int) -> tuple[str, tuple[Any, ...]]:
    """``SELECT columns FROM table`` where each named column equals its value (``None``:
    no filter), after the cursor ``before``, newest first: the SQL and its arguments."""
    clauses = [f"{column} = ?" for column, value in equal.items() if value is not None]
    args: list[Any] = [value for value in equal.values() if value is not None]
    if before is not None:
        clauses.append("seq < ?")
        args.append(before)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"SELECT {columns} FROM {table} {where} ORDER BY seq DESC LIMIT ?", (*args, limit)


class Runner(Protocol):
    """Runs ``fn(*args)`` on the store's thread, in a group commit (``sqlite_batch``)."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


class SqliteRepository:
    """One concern's calls (sessions, tasks, ...) on the store's one connection: they
    all share its thread, its group commit and its record reader."""

    def __init__(self, run: Runner, db: Callable[[], sqlite3.Connection], records: RecordReader):
        self._run = run
        self._db = db
        self.records = records

    def _write_sync(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with transaction(self._db()) as db:
            return work(db)

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` in one transaction, on the store's thread."""
        return await self._run(self._write_sync, work)
