"""An in-memory store with the same contract as SqliteStore, for tests and --memory."""

from __future__ import annotations

import itertools

from cleveragents.domain.session import Session, SessionStatus


class MemoryStore:
    backend = "memory"
    schema_version = 0

    def __init__(self) -> None:
        self._sessions: dict[str, tuple[int, Session]] = {}
        self._seq = itertools.count(1)
        self._closed = False

    async def close(self) -> None:
        self._closed = True

    def close_sync(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the store is closed")

    async def ping(self) -> dict[str, object]:
        self._check_open()
        return {"ok": True, "backend": self.backend, "schema_version": self.schema_version}

    async def check(self) -> dict[str, object]:
        self._check_open()
        return {"ok": True, "integrity": "ok", "sessions": len(self._sessions)}

    async def get_session(self, session_id: str) -> Session | None:
        self._check_open()
        entry = self._sessions.get(session_id)
        return entry[1] if entry else None

    async def add_session(self, session: Session) -> bool:
        self._check_open()
        if session.session_id in self._sessions:
            return False
        self._sessions[session.session_id] = (next(self._seq), session)
        return True

    async def save_session(self, session: Session) -> None:
        self._check_open()
        seq, _ = self._sessions[session.session_id]
        self._sessions[session.session_id] = (seq, session)

    async def list_sessions(
        self, status: SessionStatus | None, limit: int, before: int | None
    ) -> list[tuple[int, Session]]:
        self._check_open()
        rows = sorted(self._sessions.values(), key=lambda row: row[0], reverse=True)
        rows = [
            row for row in rows
            if (status is None or row[1].status == status) and (before is None or row[0] < before)
        ]
        return rows[:limit]

    async def count_sessions(self, status: SessionStatus | None = None) -> int:
        self._check_open()
        return sum(1 for _, s in self._sessions.values() if status is None or s.status == status)
