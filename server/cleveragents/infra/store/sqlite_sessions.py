"""Sessions in the SQLite store (migration 1 in ``sqlite.py``)."""

from __future__ import annotations

import json
from typing import Any

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.session import Session, SessionStatus
from cleveragents.infra.store._sql import SqliteRepository, newest_first
from cleveragents.infra.store.records import RecordReader, fill

_SESSION_COLUMNS = "seq, session_id, actor_name, status, created_at, updated_at, closed_at, metadata"


def _session(records: RecordReader, row: tuple[Any, ...]) -> Session:
    """The row's session; UnreadableRecordError when its metadata can't be served."""
    _, session_id, actor, status, created, updated, closed, metadata = row

    def build(value: Any) -> Session:
        if not isinstance(value, dict):
            raise TypeError(f"the metadata is a JSON {type(value).__name__}, not an object")
        return Session(session_id, actor, created, updated, status, closed, value)

    return records.load("sessions", session_id, metadata, build)


def _session_values(session: Session) -> tuple[Any, ...]:
    """Column values in the order both the INSERT and the UPDATE name them."""
    return (
        session.actor_name, session.status, session.created_at, session.updated_at,
        session.closed_at, json.dumps(session.metadata), session.session_id,
    )


class SqliteSessions(SqliteRepository):
    def _execute(self, sql: str, args: tuple[Any, ...]) -> int:
        return self._db().execute(sql, args).rowcount

    async def get_session(self, session_id: str) -> Session | None:
        def run() -> Session | None:
            row = self._db().execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            return _session(self.records, row) if row else None

        return await self._run(run)

    async def add_session(self, session: Session) -> bool:
        sql = (
            "INSERT INTO sessions (actor_name, status, created_at, updated_at, closed_at, metadata, "
            "session_id) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING"
        )
        return await self._run(self._execute, sql, _session_values(session)) == 1

    async def save_session(self, session: Session) -> None:
        sql = (
            "UPDATE sessions SET actor_name = ?, status = ?, created_at = ?, updated_at = ?, "
            "closed_at = ?, metadata = ? WHERE session_id = ?"
        )
        if await self._run(self._execute, sql, _session_values(session)) != 1:
            raise KeyError(session.session_id)

    async def list_sessions(
        self, status: SessionStatus | None, limit: int, before: int | None
    ) -> list[tuple[int, Session]]:
        def fetch(below: int | None, n: int) -> list[tuple[Any, ...]]:
            return self._db().execute(*newest_first(_SESSION_COLUMNS, "sessions", {"status": status}, below, n)).fetchall()

        def decode(row: tuple[Any, ...]) -> Session | None:
            try:
                return _session(self.records, row)
            except UnreadableRecordError:
                return None

        return await self._run(lambda: fill(fetch, decode, before, limit))

    async def delete_session(self, session_id: str) -> bool:
        return await self._run(self._execute, "DELETE FROM sessions WHERE session_id = ?", (session_id,)) == 1

    async def count_sessions(self, status: SessionStatus | None = None) -> int:
        sql = "SELECT COUNT(*) FROM sessions"
        args: tuple[Any, ...] = ()
        if status is not None:
            sql, args = sql + " WHERE status = ?", (status,)
        return await self._run(lambda: self._db().execute(sql, args).fetchone()[0])
