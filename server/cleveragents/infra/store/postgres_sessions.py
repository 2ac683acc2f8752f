"""Sessions in the PostgreSQL store (migration 1 in ``postgres_schema.py``)."""

from __future__ import annotations

from typing import Any

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.session import Session, SessionStatus
from cleveragents.infra.store._pg import PgRepository
from cleveragents.infra.store.records import fill_async
from cleveragents.infra.store.sqlite_sessions import _SESSION_COLUMNS, _session, _session_values

_NO_CURSOR = 2**63 - 1


class PostgresSessions(PgRepository):
    async def get_session(self, session_id: str) -> Session | None:
        row = await self._one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = %s", (session_id,))
        return _session(self.records, row) if row else None

    async def add_session(self, session: Session) -> bool:
        sql = ("INSERT INTO sessions (actor_name, status, created_at, updated_at, closed_at, metadata, session_id) "
               "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO NOTHING")
        return await self._rowcount(sql, _session_values(session)) == 1

    async def save_session(self, session: Session) -> None:
        sql = ("UPDATE sessions SET actor_name = %s, status = %s, created_at = %s, updated_at = %s, "
               "closed_at = %s, metadata = %s WHERE session_id = %s")
        if await self._rowcount(sql, _session_values(session)) != 1:
            raise KeyError(session.session_id)

    async def list_sessions(
        self, status: SessionStatus | None, limit: int, before: int | None
    ) -> list[tuple[int, Session]]:
        async def fetch(below: int | None, n: int) -> list[tuple[Any, ...]]:
            cursor = _NO_CURSOR if below is None else below
            if status is None:
                return await self._all(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE seq < %s "
                                       "ORDER BY seq DESC LIMIT %s", (cursor, n))
            return await self._all(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE status = %s AND seq < %s "
                                   "ORDER BY seq DESC LIMIT %s", (status, cursor, n))

        def decode(row: tuple[Any, ...]) -> Session | None:
            try:
                return _session(self.records, row)
            except UnreadableRecordError:
                return None

        return await fill_async(fetch, decode, before, limit)

    async def delete_session(self, session_id: str) -> bool:
        return await self._rowcount("DELETE FROM sessions WHERE session_id = %s", (session_id,)) == 1

    async def count_sessions(self, status: SessionStatus | None = None) -> int:
        if status is None:
            row = await self._one("SELECT COUNT(*) FROM sessions")
        else:
            row = await self._one("SELECT COUNT(*) FROM sessions WHERE status = %s", (status,))
        return int(row[0]) if row else 0
