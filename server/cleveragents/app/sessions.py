"""SessionService: create, close, get and list sessions; SessionActors: which actor
answers a message.

By convention a session's conversation is the A2A context named by the session id:
a message whose ``contextId`` is a session id is answered by that session's actor,
within that session's budget. Any other message gets the default actor.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cleveragents.app.paging import page, parse_cursor
from cleveragents.app.ports import SessionRepository, TaskRepository
from cleveragents.domain import events
from cleveragents.domain.actor import Actor, Budget, Usage
from cleveragents.domain.errors import (
    BudgetExceededError,
    BusinessRuleViolation,
    DuplicateEntityError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.session import DEFAULT_ACTOR, FORKED_FROM, Session, SessionCreated, SessionPage, SessionStatus
from cleveragents.domain.task import TaskState
from cleveragents.ids import new_id, utc_now

RUNNING_STATES = (TaskState.SUBMITTED, TaskState.WORKING)  # a runner holds these tasks


class SessionService:
    def __init__(self, sessions: SessionRepository, event_bus: events.EventBus, default_actor: str = DEFAULT_ACTOR,
                 resolve: Callable[[str], Actor] | None = None, tasks: TaskRepository | None = None):
        self._sessions = sessions
        self._tasks = tasks  # for ``delete``: the session's conversation goes with it
        self._bus = event_bus
        self.default_actor = default_actor
        # Checks an actor name (a ValidationError naming the known providers); no I/O.
        self._resolve = resolve
        self._updating = asyncio.Lock()  # a metadata update reads, merges and writes the record

    async def create(
        self, actor_name: str | None = None, actor: str | None = None,
        session_id: str | None = None, metadata: dict[str, Any] | None = None,
        budget: dict[str, Any] | None = None,
    ) -> SessionCreated:
        """A new session; with ``session_id`` the call is idempotent. ``budget``
        (``max_tokens``, ``max_cost``) is kept in the metadata as ``budget``."""
        chosen = actor_name or actor
        if chosen is not None and self._resolve is not None:
            self._resolve(chosen)
        metadata = dict(metadata or {})
        if budget is not None:
            metadata["budget"] = {k: v for k, v in budget.items() if v is not None}
        if session_id is not None:
            existing = await self._sessions.get_session(session_id)
            if existing is not None:
                return self._existing(existing, chosen)
        now = utc_now()
        session = Session(
            session_id=session_id or new_id(), actor_name=chosen or self.default_actor,
            created_at=now, updated_at=now, metadata=metadata,
        )
        if not await self._sessions.add_session(session):
            # Another call created it between our read and our insert.
            existing = await self._sessions.get_session(session.session_id)
            assert existing is not None
            return self._existing(existing, chosen)
        self._bus.publish(events.DomainEvent(
            events.SESSION_CREATED, session_id=session.session_id,
            data={"status": "created", "actor_name": session.actor_name},
        ))
        return SessionCreated(session, "created")

    def _existing(self, session: Session, requested_actor: str | None) -> SessionCreated:
        if requested_actor is not None and requested_actor != session.actor_name:
            raise DuplicateEntityError(
                "A session with this id exists with another actor",
                {"session_id": session.session_id, "actor_name": session.actor_name,
                 "requested_actor": requested_actor},
            )
        return SessionCreated(session, session.status)

    async def _require(self, session_id: str) -> Session:
        session = await self._sessions.get_session(session_id)
        if session is None:
            raise ResourceNotFoundError("Session not found", {"session_id": session_id})
        return session

    async def close(self, session_id: str) -> Session:
        session = await self._require(session_id)
        if session.is_open:
            session = session.closed(utc_now())
            await self._sessions.save_session(session)
            self._bus.publish(events.DomainEvent(
                events.SESSION_CLOSED, session_id=session_id, data={"status": "closed"},
            ))
        return session

    async def delete(self, session_id: str) -> dict[str, Any]:
        """Removes the session and its conversation (the tasks of its context). A task
        still running in it is a ``BusinessRuleViolation``: cancel it first. Plans made
        in the session, and their journals, stay (they are the workspace's history)."""
        await self._require(session_id)
        if self._tasks is not None:
            running = await self._tasks.count_tasks(context_id=session_id, states=RUNNING_STATES)
            if running:
                raise BusinessRuleViolation("A task is running in this session: cancel it first",
                                            {"session_id": session_id, "running": running})
            removed = await self._tasks.delete_context(session_id)
        else:
            removed = 0
        await self._sessions.delete_session(session_id)
        self._bus.publish(events.DomainEvent(events.SESSION_CLOSED, session_id=session_id,
                                             data={"status": "deleted"}))
        return {"session_id": session_id, "deleted": True, "tasks_deleted": removed}

    async def get(self, session_id: str) -> Session:
        return await self._require(session_id)

    async def update(self, session_id: str, metadata: dict[str, Any]) -> Session:
        """Merges ``metadata`` into the session's (``None`` removes a key). The budget
        is the session's limit, fixed at creation: it is not changed here."""
        if "budget" in metadata:
            raise ValidationError.for_field(["metadata", "budget"], "the budget is set when the session is created")
        if FORKED_FROM in metadata:  # whose conversation the actor goes on from
            raise ValidationError.for_field(["metadata", FORKED_FROM], "a fork's origin is set when it is created")
        async with self._updating:
            session = (await self._require(session_id)).with_metadata(metadata, utc_now())
            await self._sessions.save_session(session)
        return session

    async def list(
        self, status: SessionStatus | None = None, limit: int = 100, cursor: str | None = None
    ) -> SessionPage:
        before = parse_cursor(cursor)
        rows = await self._sessions.list_sessions(status, limit + 1, before)
        sessions, next_cursor = page(rows, limit)
        return SessionPage(tuple(sessions), next_cursor, await self._sessions.count_sessions(status))



NO_USAGE = Usage()
NO_BUDGET = Budget()
SPENT_PAGE = 200
SPENT_PAGES = 50  # a session's usage is summed over at most this many pages of tasks
MAX_ACTORS = 64


@dataclass(frozen=True, slots=True)
class ActorChoice:
    """The actor for a message, the budget it answers within and what was spent of it."""

    actor: Actor
    budget: Budget = NO_BUDGET
    spent: Usage = NO_USAGE
    context: Mapping[str, Any] = field(default_factory=dict)
    scope: dict[str, Any] = field(default_factory=dict)

    def check(self, used: Usage = NO_USAGE) -> None:
        """``BudgetExceededError`` when ``spent + used`` passes a limit."""
        total = self.spent + used
        if (limit := self.budget.exceeded_by(total)) is not None:
            raise BudgetExceededError(
                f"Budget exceeded: {limit} is {getattr(self.budget, limit)}",
                {**self.scope, "limit": limit, "max": getattr(self.budget, limit), "used": total.to_dict()})


class SessionActors:
    def __init__(self, sessions: SessionRepository, tasks: TaskRepository, resolve: Callable[[str], Actor],
                 default: Actor, *, session_budget: Budget = NO_BUDGET,
                 context: Callable[[str], Awaitable[Mapping[str, Any]]] | None = None):
        self._sessions = sessions
        self._tasks = tasks
        self._resolve = resolve
        self.default = default
        self._session_budget = session_budget
        self._context = context
        self._actors: OrderedDict[str, Actor] = OrderedDict()

    def actor(self, name: str) -> Actor:
        """The actor called ``name``, resolved once (actors keep what they learn,
        like a remote agent's task ids)."""
        if (actor := self._actors.get(name)) is None:
            actor = self._actors[name] = self._resolve(name)
            while len(self._actors) > MAX_ACTORS:
                self._actors.popitem(last=False)
        return actor

    async def choose(self, context_id: str | None) -> ActorChoice:
        session = await self._sessions.get_session(context_id) if context_id else None
        if session is None:
            return ActorChoice(self.default)
        session.require_open()
        actor = self.actor(session.actor_name)
        budget = Budget.from_dict(session.metadata.get("budget")).tighter(self._session_budget)
        budget = budget.tighter(getattr(actor, "budget", None) or Budget())
        spent = await self._spent(session.session_id) if budget.limited else Usage()
        context = await self._context(session.session_id) if self._context is not None else {}
        choice = ActorChoice(actor, budget, spent, context, {"session_id": session.session_id})
        choice.check()  # nothing more once the budget is spent
        return choice

    async def _spent(self, session_id: str) -> Usage:
        total, before = Usage(), None
        for _ in range(SPENT_PAGES):
            rows = await self._tasks.list_tasks(context_id=session_id, limit=SPENT_PAGE, before=before)
            for _, task in rows:
                total = total + Usage.from_dict((task.metadata or {}).get("usage"))
            if len(rows) < SPENT_PAGE:
                break
            before = rows[-1][0]
        return total
