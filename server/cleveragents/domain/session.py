"""The Session entity: who is talking to which actor, and whether it is still open."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cleveragents.domain.errors import BusinessRuleViolation

SessionStatus = Literal["active", "closed"]
DEFAULT_ACTOR = "local/default"
# A fork's metadata names where it started: {"session_id": the parent, "before": an id};
# its conversation goes on from the parent's tasks whose ids (time-ordered) sort before it.
FORKED_FROM = "forked_from"


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    actor_name: str
    created_at: str
    updated_at: str
    status: SessionStatus = "active"
    closed_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        return self.status == "active"

    @property
    def forked_from(self) -> tuple[str, str] | None:
        """(parent session id, the id the parent's conversation ends before), for a fork."""
        origin = self.metadata.get(FORKED_FROM)
        if isinstance(origin, dict) and isinstance(parent := origin.get("session_id"), str) \
                and isinstance(before := origin.get("before"), str) and parent != self.session_id:
            return parent, before
        return None

    def closed(self, now: str) -> Session:
        """This session, closed at ``now``. Closing is idempotent."""
        if not self.is_open:
            return self
        return replace(self, status="closed", closed_at=now, updated_at=now)

    def with_metadata(self, changes: dict[str, Any], now: str) -> Session:
        """This session with ``changes`` merged into its metadata: a ``None`` value
        removes its key, every other key is kept."""
        metadata = {**self.metadata, **{k: v for k, v in changes.items() if v is not None}}
        for key in (k for k, v in changes.items() if v is None):
            metadata.pop(key, None)
        return replace(self, metadata=metadata, updated_at=now)

    def require_open(self) -> None:
        if not self.is_open:
            raise BusinessRuleViolation(
                "Session is closed",
                {"session_id": self.session_id, "state": self.status, "allowed_actions": []},
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "actor_name": self.actor_name,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "closed_at": self.closed_at,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class SessionCreated:
    """What ``session.create`` found or made: ``status`` is "created" for a new
    session, else the existing one's status."""

    session: Session
    status: str


@dataclass(frozen=True, slots=True)
class SessionPage:
    sessions: tuple[Session, ...]
    next_cursor: str | None
    total: int
