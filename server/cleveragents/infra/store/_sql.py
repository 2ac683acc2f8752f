"""What every SQLite store module shares: the write transaction, and the query for a
newest-first page."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


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
