"""SessionService: create, close, get and list sessions."""

from __future__ import annotations

from typing import Any

from cleveragents.app.paging import page, parse_cursor
from cleveragents.app.ports import SessionRepository
from cleveragents.domain import events
from cleveragents.domain.errors import DuplicateEntityError, ResourceNotFoundError
from cleveragents.domain.session import DEFAULT_ACTOR, Session, SessionStatus
from cleveragents.ids import new_id, utc_now


class SessionService:
    def __init__(self, store: SessionRepository, event_bus: events.EventBus, default_actor: str = DEFAULT_ACTOR):
        self._store = store
        self._bus = event_bus
        self.default_actor = default_actor

    async def create(
        self, actor_name: str | None = None, actor: str | None = None,
        session_id: str | None = None, metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A new session; with ``session_id`` the call is idempotent."""
        chosen = actor_name or actor
        if session_id is not None:
            existing = await self._store.get_session(session_id)
            if existing is not None:
                return self._existing(existing, chosen)
        now = utc_now()
        session = Session(
            session_id=session_id or new_id(), actor_name=chosen or self.default_actor,
            created_at=now, updated_at=now, metadata=dict(metadata or {}),
        )
        if not await self._store.add_session(session):
            # Another call created it between our read and our insert.
            existing = await self._store.get_session(session.session_id)
            assert existing is not None
            return self._existing(existing, chosen)
        self._bus.publish(events.DomainEvent(
            events.SESSION_CREATED, session_id=session.session_id,
            data={"status": "created", "actor_name": session.actor_name},
        ))
        return self._summary(session, "created")

    def _existing(self, session: Session, requested_actor: str | None) -> dict[str, Any]:
        if requested_actor is not None and requested_actor != session.actor_name:
            raise DuplicateEntityError(
                "A session with this id exists with another actor",
                {"session_id": session.session_id, "actor_name": session.actor_name,
                 "requested_actor": requested_actor},
            )
        return self._summary(session, session.status)

    @staticmethod
    def _summary(session: Session, status: str) -> dict[str, Any]:
        return {
            "session_id": session.session_id, "status": status,
            "actor_name": session.actor_name, "created_at": session.created_at,
        }

    async def _require(self, session_id: str) -> Session:
        session = await self._store.get_session(session_id)
        if session is None:
            raise ResourceNotFoundError("Session not found", {"session_id": session_id})
        return session

    async def close(self, session_id: str) -> dict[str, Any]:
        session = await self._require(session_id)
        if session.is_open:
            session = session.closed(utc_now())
            await self._store.save_session(session)
            self._bus.publish(events.DomainEvent(
                events.SESSION_CLOSED, session_id=session_id, data={"status": "closed"},
            ))
        return {"session_id": session_id, "status": "closed", "closed_at": session.closed_at}

    async def get(self, session_id: str) -> dict[str, Any]:
        return (await self._require(session_id)).to_dict()

    async def list(
        self, status: SessionStatus | None = None, limit: int = 100, cursor: str | None = None
    ) -> dict[str, Any]:
        before = parse_cursor(cursor)
        rows = await self._store.list_sessions(status, limit + 1, before)
        sessions, next_cursor = page(rows, limit)
        return {
            "sessions": [session.to_dict() for session in sessions],
            "next_cursor": next_cursor,
            "total": await self._store.count_sessions(status),
        }

