"""The interfaces the application layer needs from infrastructure."""

from __future__ import annotations

from typing import Protocol

from cleveragents.domain.session import Session, SessionStatus


class SessionRepository(Protocol):
    async def get_session(self, session_id: str) -> Session | None: ...

    async def add_session(self, session: Session) -> bool:
        """Insert; ``False`` when a session with that id already exists."""

    async def save_session(self, session: Session) -> None: ...

    async def list_sessions(
        self, status: SessionStatus | None, limit: int, before: int | None
    ) -> list[tuple[int, Session]]:
        """Newest first, as (position, session); ``before`` is the last position of
        the previous page."""

    async def count_sessions(self, status: SessionStatus | None = None) -> int: ...


class Store(SessionRepository, Protocol):
    """The whole store: every repository, plus its own health."""

    backend: str

    async def ping(self) -> dict[str, object]:
        """A cheap round trip; raises when the store can't answer."""

    async def check(self) -> dict[str, object]:
        """A deeper check (integrity, writability) for diagnostics."""

    async def close(self) -> None: ...
