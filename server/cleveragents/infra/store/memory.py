"""An in-memory store with the same contract as SqliteStore, for tests and --memory.

Each concern is a repository of its own (``memory_tasks.py``, ``memory_plans.py``,
sessions here); they share the store's open/closed state and its record reader.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from cleveragents.domain.session import Session, SessionStatus
from cleveragents.infra.store._memory import MemoryRepository
from cleveragents.infra.store.memory_events import MemoryEventLogs
from cleveragents.infra.store.memory_plans import MemoryPins, MemoryPlans
from cleveragents.infra.store.memory_tasks import MemoryPushConfigs, MemoryTasks, _SortedList
from cleveragents.infra.store.records import RecordReader
from cleveragents.infra.store.sqlite_tasks import DEFAULT_TERMINAL_CAP
from cleveragents.infra.store.whole import WholeStore

__all__ = ["MemorySessions", "MemoryStore", "_SortedList"]


class MemorySessions(MemoryRepository):
    def __init__(self, check_open: Callable[[], None], records: RecordReader) -> None:
        super().__init__(check_open, records)
        self._sessions: dict[str, tuple[int, Session]] = {}
        self._seq = itertools.count(1)

    @property
    def stored(self) -> int:
        """How many sessions are stored (for the health check)."""
        return len(self._sessions)

    async def get_session(self, session_id: str) -> Session | None:
        self._check_open()
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        self.records.require("sessions", session_id, entry[1].to_dict)
        return entry[1]

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
            and self.records.problem("sessions", row[1].session_id, row[1].to_dict) is None
        ]
        return rows[:limit]

    async def count_sessions(self, status: SessionStatus | None = None) -> int:
        self._check_open()
        return sum(1 for _, s in self._sessions.values() if status is None or s.status == status)

    async def delete_session(self, session_id: str) -> bool:
        self._check_open()
        return self._sessions.pop(session_id, None) is not None


class MemoryStore(WholeStore):
    backend = "memory"
    schema_version = 0

    def __init__(self, *, terminal_cap: int = DEFAULT_TERMINAL_CAP) -> None:
        self._closed = False
        self.records = RecordReader()
        self.sessions = MemorySessions(self._check_open, self.records)
        self.tasks = MemoryTasks(self._check_open, self.records, terminal_cap=terminal_cap)
        self.push_configs = MemoryPushConfigs(self._check_open, self.records, self.tasks)
        self.plans = MemoryPlans(self._check_open, self.records)
        self.pins = MemoryPins(self._check_open, self.records)
        self.events = MemoryEventLogs()
        self._expose(self.sessions, self.tasks, self.push_configs, self.plans, self.pins, self.events)

    async def close(self) -> None:
        self._closed = True

    def close_sync(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the store is closed")

    # -- health --------------------------------------------------------------------
    def unreadable_records(self) -> list[dict[str, str]]:
        return self.records.report()

    async def ping(self) -> dict[str, object]:
        self._check_open()
        return {"ok": True, "backend": self.backend, "schema_version": self.schema_version}

    async def check(self) -> dict[str, object]:
        self._check_open()
        return {"ok": True, "integrity": "ok", "sessions": self.sessions.stored, "tasks": self.tasks.stored}
