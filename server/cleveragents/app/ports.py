"""The interfaces the application layer needs from infrastructure.

The store is one repository per concern (sessions, tasks, push configs, plans in
``plan_ports.py``, context pins, the task event logs that resume a stream) plus its
health, grouped in ``Stores`` for the composition root. Each service is given only the
repositories it uses. The event subscription's events are not stored: the event queue
(``a2a/events.py``) keeps them in memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cleveragents.app.plan_ports import PlanRepository
from cleveragents.domain.actor import Actor, Usage
from cleveragents.domain.page_budget import PageBudget
from cleveragents.domain.session import Session, SessionStatus
from cleveragents.domain.task import Message, PushConfig, StreamEvent, StreamItem, Task, TaskState


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

    async def delete_session(self, session_id: str) -> bool:
        """Remove the record; ``False`` when there was none."""


class TaskRepository(Protocol):
    """Tasks. Terminal tasks beyond the store's cap are evicted, earliest-terminal
    first, with their push configs; live tasks never are."""

    async def add_task(self, task: Task) -> bool:
        """Insert; ``False`` when a task with that id already exists."""

    async def save_task(self, task: Task) -> None:
        """Replace the stored task; ``KeyError`` when it is missing."""

    async def get_task(self, task_id: str) -> Task | None: ...

    async def delete_context(self, context_id: str) -> int:
        """Remove every task of the context, with their push configs; how many."""

    async def list_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None, limit: int, before: int | None = None, budget: PageBudget | None = None,
    ) -> list[tuple[int, Task]]:
        """Newest first, as (position, task); ``before`` is the last position of the
        previous page. ``status_after`` (ISO 8601) keeps tasks whose status timestamp
        is later; a malformed one raises ``ValidationError``. A ``budget`` on the tasks'
        stored JSON may end the page before ``limit`` (it says so)."""

    async def count_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None,
    ) -> int: ...

    async def live_tasks(self) -> list[Task]:
        """Every non-terminal task, oldest first (for recovery after a restart); a store
        that several processes share leaves out those another live process runs."""

    async def waiting_task(self, context_id: str) -> Task | None:
        """The newest task of the context that waits for input (input-required or
        auth-required), or None; through an index, whatever the context holds."""



@runtime_checkable
class PushConfigRepository(Protocol):
    """A task's push configs; they go when the task goes."""

    async def put_push_config(self, cfg: PushConfig) -> None:
        """Insert or replace by (task_id, id); ``KeyError`` when the task is missing."""

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None: ...

    async def list_push_configs(self, task_id: str) -> list[PushConfig]:
        """In the order they were first put."""

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """``False`` when there was nothing to delete."""


class PinRepository(Protocol):
    """Context pins: JSON values under a scope (``"session:<id>"`` or ``"plan:<id>"``)."""

    async def set_pin(self, scope: str, key: str, value: Any) -> None:
        """Upsert; an updated pin keeps its place."""

    async def delete_pin(self, scope: str, key: str) -> bool:
        """``True`` when the pin existed."""

    async def list_pins(self, scope: str) -> list[tuple[str, Any]]:
        """(key, value) in insertion order."""


class TaskEventLog(Protocol):
    """One task's stream items, each numbered with an event id (a ULID, later for every
    later item); the newest are kept, within the engine's bounds."""

    @property
    def task_id(self) -> str: ...

    @property
    def last(self) -> str:
        """The latest id: the last item's, or, before any, the id of the state the log
        started from."""

    def append(self, item: StreamItem) -> StreamEvent:
        """``item`` with a new id. Called for every item streamed: it must not wait."""

    def after(self, event_id: str | None) -> list[StreamEvent] | None:
        """The items after ``event_id``; ``None`` when the log can't tell (no id, not a
        ULID, older than what is kept or newer than ``last``)."""


@runtime_checkable
class TaskEventLogs(Protocol):
    """The task event logs, by which ``SubscribeToTask`` resumes after the last event a
    client saw. A run holds the log of the task it works on; once it stops (the task
    finished or waits for input) the log is kept, with the logs of the other tasks that
    stopped most recently, until a run resumes the task and takes it back.

    Synchronous on purpose: every streamed item is appended, and reading what a
    subscriber missed happens with its registration, with no await between them, so
    nothing is broadcast in the gap."""

    def new_event_log(self, task_id: str) -> TaskEventLog:
        """A fresh log, the run's until it is kept."""

    def keep_event_log(self, log: TaskEventLog) -> None:
        """The task stopped running: keep its log (the oldest kept ones go beyond the
        engine's bound)."""

    def kept_event_log(self, task_id: str) -> TaskEventLog | None: ...

    def take_event_log(self, task_id: str) -> TaskEventLog | None:
        """A run resumes the task: its kept log, no longer kept but the run's."""

    def open_event_log(self, task_id: str) -> TaskEventLog:
        """The kept log, or a fresh one kept from now on."""


class PeerSignals(Protocol):
    """What processes sharing one store tell each other (PostgreSQL: ``LISTEN`` and
    ``NOTIFY``); a store that one process owns has none."""

    async def ask_cancel(self, task_id: str) -> None:
        """Ask the process that runs ``task_id`` to cancel it."""

    def on_cancel(self, handler: Callable[[str], None]) -> None:
        """Call ``handler(task_id)`` for each cancel a peer asks for (on the loop)."""


class SharedTaskEvents(Protocol):
    """The events of tasks other processes run, for a store several share: how a
    stream that began on one resumes on another."""

    async def latest_event_id(self, task_id: str) -> str | None: ...

    def follow(self, task_id: str, after: str | None,
               running: Callable[[], Awaitable[bool]]) -> AsyncIterator[StreamEvent]:
        """The task's events after ``after`` as they are written, until one ends the
        stream, or none come and ``running()`` says the task no longer runs."""


class StoreHealth(Protocol):
    """The store's own health, for health checks and diagnostics."""

    @property
    def backend(self) -> str: ...

    async def ping(self) -> dict[str, object]:
        """A cheap round trip; raises when the store can't answer."""

    async def check(self) -> dict[str, object]:
        """A deeper check (integrity, writability) for diagnostics."""

    def unreadable_records(self) -> list[dict[str, str]]:
        """The stored records met so far that can't be served (lists skip them), as
        ``{store, id, reason}``, in the order they were met."""


@dataclass(frozen=True, slots=True)
class Stores:
    """The store, one repository per concern; any engine that implements these will do."""

    sessions: SessionRepository
    tasks: TaskRepository
    push_configs: PushConfigRepository
    plans: PlanRepository
    pins: PinRepository
    events: TaskEventLogs
    health: StoreHealth


# -- what the task service is given ---------------------------------------------------
class PushDispatcher(Protocol):
    async def admit(self, config: PushConfig) -> None:
        """Raise ``ValidationError`` if the config's URL is one the server won't call."""

    def deliver(self, config: PushConfig, item: StreamItem) -> None:
        """Queue ``item`` for the webhook; never blocks, never raises."""


class ContextRouter(Protocol):
    """Claims messages for contexts that belong to something else (a plan's gate),
    and shows that something as a task."""

    async def claim(self, message: Message) -> Task | None: ...

    async def task(self, task_id: str) -> Task | None: ...

    async def cancel(self, task_id: str) -> Task | None: ...


class ChosenActor(Protocol):
    """The actor that answers a message (``app.sessions.ActorChoice``)."""

    @property
    def actor(self) -> Actor: ...

    @property
    def context(self) -> Mapping[str, Any]:
        """The turn's context tiers."""

    def check(self, used: Usage = ...) -> None:
        """``BudgetExceededError`` once what was spent, plus ``used``, passes the budget."""


class ActorSelector(Protocol):
    """Which actor answers a message in a context (``app.sessions.SessionActors``)."""

    async def choose(self, context_id: str | None) -> ChosenActor: ...
