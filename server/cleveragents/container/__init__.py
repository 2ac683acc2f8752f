"""The composition root: concrete infrastructure wired into the services.

Every entry point (stdio server, CLI, tests, a published agent) builds its services
here, so they are wired the same way everywhere. What the settings and the
configuration files give on their own is in ``configured.py``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cleveragents.config import Settings
from cleveragents.container.configured import (
    actor_providers,
    guard_policy,
    json_limits,
    known_providers,
    load_configuration,
    remote_client,
)

if TYPE_CHECKING:
    from cleveragents.a2a.card_cache import CardCache
    from cleveragents.a2a.card_service import AgentCardService, CardSource
    from cleveragents.a2a.card_signing import CardVerifier
    from cleveragents.a2a.client_http import A2AClient
    from cleveragents.a2a.events import A2AEventQueue, EventBusBridge
    from cleveragents.a2a.push import PushSender
    from cleveragents.app.context import ContextService
    from cleveragents.app.health import HealthService
    from cleveragents.app.plans import PlanLifecycleService
    from cleveragents.app.ports import Stores
    from cleveragents.app.registry import ActionRegistry, RegistryService, ResourceRegistryService, ToolRegistry
    from cleveragents.app.sessions import SessionActors, SessionService
    from cleveragents.app.tasks import TaskService
    from cleveragents.domain.actor import Actor
    from cleveragents.domain.events import EventBus
    from cleveragents.domain.guards import GuardPolicy
    from cleveragents.domain.plan import Plan
    from cleveragents.http_clients import KeptClients
    from cleveragents.infra.state_dir import StateDirOwner
    from cleveragents.infra.store.memory import MemoryStore
    from cleveragents.infra.store.postgres import PostgresStore
    from cleveragents.infra.store.sqlite import SqliteStore
    from cleveragents.infra.tools.runner import ToolRunner
    from cleveragents.infra.workspace.plan_workspace import PlanWorkspace

logger = logging.getLogger(__name__)


class Container:
    """Owns the services and their lifetimes. Building it opens the store (blocking).

    ``actor`` replaces the default local actor for agent tasks (a published
    ``Agent``); ``card`` is what describes the agent (``cleveragents.A2A``), giving
    the card's name, skills and extended-card callback. ``max_message_size``: the
    largest message (bytes) the transport serving it reads, for the extended card.
    ``health_started`` is when health checks were first answered, before the container
    (the stdio server's early answers), so that ``started_at`` and the uptime go on from there.
    """

    def __init__(self, settings: Settings | None = None, *, actor: Actor | None = None,
                 card: CardSource | None = None, max_message_size: int | None = None,
                 health_started: tuple[float, str] | None = None):
        from cleveragents.a2a.events import A2AEventQueue, EventBusBridge
        from cleveragents.app.health import HealthService
        from cleveragents.app.ports import Stores
        from cleveragents.app.sessions import SessionService
        from cleveragents.domain.events import EventBus

        settings = settings or Settings()
        self._owner: StateDirOwner | None = None  # the state directory's owner lock, taken at the start-up repair
        # The configuration files; a bad one stops the build here, before anything is opened.
        self.config = load_configuration(settings)
        self.settings = settings.with_file_defaults(self.config.defaults)
        self.json_limits = json_limits(self.settings)
        if self.settings.tracing:
            from cleveragents import tracing

            tracing.enable()
        self.workspace = self.settings.resolved_workspace
        self._scratch: Path | None = None
        self.store: SqliteStore | MemoryStore | PostgresStore = self._open_store()
        self.stores: Stores = Stores(self.store.sessions, self.store.tasks, self.store.push_configs,
                                     self.store.plans, self.store.pins, events=self.store.events, health=self.store)
        self.event_bus: EventBus = EventBus()
        self.event_queue: A2AEventQueue = A2AEventQueue(self.settings.event_buffer)
        self.bridge: EventBusBridge = EventBusBridge(self.event_bus, self.event_queue).start()
        self.session_service: SessionService = SessionService(
            self.stores.sessions, self.event_bus, self.settings.default_actor, resolve=self.resolve_actor,
            tasks=self.stores.tasks)
        self.health_service: HealthService = HealthService(
            self.stores.health, self.workspace, [self.settings.default_actor], actor_providers(), health_started,
        )
        self.max_message_size = max_message_size
        self._build_plans()
        self._build_tasks(actor, card)
        self._build_registries(card)
        self._closed = False
        self._sweeping: asyncio.Future[None] | None = None  # PostgreSQL: _sweep_gone_replicas

    def _open_store(self) -> SqliteStore | MemoryStore | PostgresStore:
        if self.settings.store is not None:
            # Connected (and migrated) in start(), on the event loop its pool belongs to.
            # The state directory still holds this machine's plan blobs and apply journals.
            from cleveragents.infra.state_dir import prepare_state_dir
            from cleveragents.infra.store.postgres import PostgresStore

            prepare_state_dir(self.settings.resolved_state_dir)
            return PostgresStore(self.settings.store, terminal_cap=self.settings.max_terminal_tasks)
        if self.settings.memory:
            from cleveragents.infra.store.memory import MemoryStore

            return MemoryStore(terminal_cap=self.settings.max_terminal_tasks)
        from cleveragents.infra.state_dir import prepare_state_dir
        from cleveragents.infra.store.sqlite import SqliteStore

        state_dir = prepare_state_dir(self.settings.resolved_state_dir)
        logger.info("opening the state store in %s", state_dir)
        return SqliteStore.open_in(state_dir, terminal_cap=self.settings.max_terminal_tasks)

    @property
    def blob_dir(self) -> Path:
        """Where plan blobs and apply journals live (a scratch dir in memory mode)."""
        if not self.settings.memory:
            return self.settings.resolved_state_dir
        if self._scratch is None:
            from cleveragents.infra.process_tmp import new_dir

            self._scratch = Path(new_dir("scratch"))
        return self._scratch

    def _build_plans(self) -> None:
        from cleveragents.app.plans import PlanLifecycleService
        from cleveragents.app.registry import ActionRegistry, ToolRegistry
        from cleveragents.domain.actor import Budget
        from cleveragents.domain.guards import GuardPolicy
        from cleveragents.infra.actions import actions_fingerprint, load_actions
        from cleveragents.infra.tools.builtin import builtin_tools
        from cleveragents.infra.tools.runner import ToolRunner
        from cleveragents.infra.workspace.plan_workspace import PlanWorkspace

        # Every tool call (a plan step's, an agent task's) runs here: off the event loop, within tool_timeout.
        self.tool_runner: ToolRunner = ToolRunner(self.settings.tool_timeout)
        self.guard_policy: GuardPolicy = guard_policy(GuardPolicy(), self.workspace, self.blob_dir,
                                                      self.config.protected_paths)
        self.plan_workspace: PlanWorkspace = PlanWorkspace(self.workspace, self.blob_dir, self.guard_policy)
        self.tool_registry: ToolRegistry = ToolRegistry(builtin_tools())
        self.action_registry: ActionRegistry = ActionRegistry(
            lambda: load_actions(self.workspace), self.tool_registry, lambda: actions_fingerprint(self.workspace)
        )
        self.plan_service: PlanLifecycleService = PlanLifecycleService(
            self.stores.plans, self.plan_workspace, self.tool_registry, self.action_registry, self.event_bus,
            sessions=self.stores.sessions, call_tool=self.tool_runner.call, max_steps=self.guard_policy.max_steps,
            actor_for=self._plan_actor,
            plan_budget=Budget(self.settings.plan_max_tokens, self.settings.plan_max_cost),
            may_repair=self._owns_state, tool_settings=self.config.tool_settings(),
        )
        self.plan_service.default_profile = self.settings.automation_profile

    def resolve_actor(self, name: str) -> Actor:
        """The actor called ``name`` (``ValidationError`` naming the known providers).
        Actors the configuration file declares are resolved with their settings."""
        from cleveragents.infra.actors.resolve import resolve_actor

        declared = getattr(self.config, "declared_actors", None)
        return resolve_actor(name, self.settings, declared=declared() if declared else None,
                             local=self._local_actor, remote=self._remote_client,
                             model_http=lambda: self.model_clients.get(None))

    def _default_is_local(self) -> bool:
        from cleveragents.infra.actors.resolve import is_local_actor

        name = self.settings.default_actor
        return is_local_actor(name, self.config.declared_actors().get(name))

    def _local_actor(self, name: str) -> Actor:
        from cleveragents.app.editor_reads import turn_read_through
        from cleveragents.infra.actors.local import LocalActor

        tools = self.tool_registry
        root = str(self.workspace)
        return LocalActor(tools=lambda: [tools.get(n) for n in tools.names()],
                          view=lambda: self.plan_workspace.overlay(None, turn_read_through(root)),
                          workspace=root, name=name, runner=self.tool_runner)

    def _remote_client(self, url: str, token_env: str | None) -> A2AClient:
        return remote_client(self.settings, url, self.card_verifier, token_env, self.card_cache,
                             self.agent_connections)

    @functools.cached_property
    def model_clients(self) -> KeptClients[None]:
        """The one HTTP client the model actors share, so connections outlive a turn."""
        from cleveragents.http_clients import KeptClients
        from cleveragents.infra.actors.openai import model_client

        return KeptClients(model_client, size=1)

    @functools.cached_property
    def agent_connections(self) -> KeptClients[tuple[str, float]]:
        """The connections to remote agents, kept between turns, by URL and timeout."""
        from cleveragents.a2a.client_reach import agent_client
        from cleveragents.http_clients import KeptClients

        return KeptClients(agent_client)

    @functools.cached_property
    def card_cache(self) -> CardCache:
        """Remote agents' cards, kept as their ``Cache-Control`` allows, for this verifier's clients."""
        from cleveragents.a2a.card_cache import CardCache

        return CardCache()

    @functools.cached_property
    def card_verifier(self) -> CardVerifier | None:
        """How peers' cards are checked: one verifier, so a fetched JWK Set is shared."""
        from cleveragents.a2a.card_signing import verifier_from_settings

        return verifier_from_settings(self.settings)

    def _plan_actor(self, plan: Plan) -> Awaitable[Actor]:
        """The actor a plan step asks (``actor.edit``): its session's, else the default."""
        async def choose() -> Actor:
            session = await self.stores.sessions.get_session(plan.session_id) if plan.session_id else None
            if session is None:
                return self.session_actors.default
            return self.session_actors.actor(session.actor_name)

        return choose()

    def _build_tasks(self, actor: Actor | None, card: CardSource | None) -> None:
        from cleveragents.a2a.card_service import AgentCardService
        from cleveragents.a2a.push import PushSender
        from cleveragents.app.context import ContextService
        from cleveragents.app.editor_reads import turn_read_through
        from cleveragents.app.plan_gates import PlanGates
        from cleveragents.app.sessions import SessionActors
        from cleveragents.app.tasks import TaskService
        from cleveragents.domain.actor import Budget, ToolInfo
        from cleveragents.domain.tools import ToolContext
        from cleveragents.infra.actors.toolbox import ToolBox
        from cleveragents.infra.push_targets import PushTargets
        from cleveragents.infra.webhooks import WebhookPoster

        tools = self.tool_registry
        named = getattr(actor, "actor_name", None)
        if isinstance(named, str) and getattr(actor, "actor", None) is None:
            setattr(actor, "actor", self.resolve_actor(named))  # noqa: B010 (an Agent naming its model actor)
        elif getattr(actor, "uses_default_actor", False) and not self._default_is_local():
            setattr(actor, "actor", self.resolve_actor(self.settings.default_actor))  # noqa: B010 (an Agent naming none)
        self.actor: Actor = actor or self.resolve_actor(self.settings.default_actor)
        self._published = actor is not None
        # Agent tasks read the workspace; changes go through plans, where they are reviewed.
        toolbox = ToolBox(lambda: [tools.get(name) for name in tools.names()], runner=self.tool_runner)
        infos: list[ToolInfo] = []

        def tool_infos() -> list[ToolInfo]:
            # The backend's tools, for its own actors; a published agent brings its own.
            if not infos:
                infos.extend(toolbox.infos())
            return infos

        def tool_context() -> ToolContext:
            # In a turn whose caller's editor reads files, the tools read its buffers.
            through = turn_read_through(str(self.workspace))
            return ToolContext(view=self.plan_workspace.overlay(None, through), workspace=str(self.workspace))

        async def session_context(session_id: str) -> dict[str, Any]:
            shown = await self.context_service.show(session_id=session_id)
            return {"tiers": shown["tiers"]}

        # A message in a session's context is answered by the session's actor; a
        # published agent answers everything itself.
        self.session_actors: SessionActors = SessionActors(
            self.stores.sessions, self.stores.tasks, self.resolve_actor, self.actor,
            session_budget=Budget(self.settings.session_max_tokens, self.settings.session_max_cost),
            context=session_context)
        targets = PushTargets(self.settings.push_allowed_networks)
        self._webhooks = WebhookPoster(targets)
        self.push_sender: PushSender = PushSender(self._webhooks, admit=self._webhooks.admit)
        self.task_service: TaskService = TaskService(
            self.stores.tasks, self.actor, push_configs=self.stores.push_configs,
            tools=None if actor is not None else tool_infos, push=self.push_sender,
            router=PlanGates(self.plan_service), selector=None if actor is not None else self.session_actors,
            invoker=None if actor is not None else toolbox.invoker(tool_context), may_repair=self._owns_state,
            events=self.stores.events, peers=getattr(self.store, "peers", None),
            shared_events=self.store.events if self.settings.store is not None else None,  # type: ignore[arg-type]
            reply_as=getattr(card, "reply_as", None))
        from cleveragents.a2a.card_signing import signer_from_settings

        self.agent_card_service: AgentCardService = AgentCardService.for_backend(
            card, self.tool_registry, details=self._extended_card_details, signer=signer_from_settings(self.settings))
        self.context_service: ContextService = ContextService(
            self.stores.sessions, self.stores.plans, self.stores.tasks, self.stores.pins, self.plan_workspace)

    def _extended_card_details(self) -> dict[str, Any]:
        """What only authenticated callers see on the card: the actors and the limits."""
        from cleveragents.app.registry import actor_rows

        actors = [{key: row[key] for key in ("name", "kind", "provider", "model", "description", "default")}
                  for row in actor_rows(known_providers(), self.config.actors, self.settings.default_actor)]
        if self._published:  # the agent itself first, with a team's members
            members = [getattr(a, "name", str(a)) for a in getattr(self.actor, "agents", ())]
            actors.insert(0, {"name": getattr(self.actor, "name", type(self.actor).__name__), "kind": "published",
                              **({"members": members} if members else {})})
        settings = self.settings
        limits = {"maxJsonDepth": self.json_limits.max_depth, "maxMetadataSize": self.json_limits.max_metadata_size,
                  "maxTerminalTasks": settings.max_terminal_tasks, "eventBuffer": settings.event_buffer,
                  "toolTimeoutSeconds": settings.tool_timeout, "actorTimeoutSeconds": settings.actor_timeout,
                  "maxToolRounds": settings.max_tool_rounds}
        if self.max_message_size is not None:  # in process, no transport limits the messages
            limits["maxMessageSize"] = self.max_message_size
        budgets = {"sessionMaxTokens": settings.session_max_tokens, "sessionMaxCost": settings.session_max_cost,
                   "planMaxTokens": settings.plan_max_tokens, "planMaxCost": settings.plan_max_cost}
        limits.update({key: value for key, value in budgets.items() if value is not None})
        return {"actors": actors, "limits": limits}

    def _build_registries(self, card: CardSource | None) -> None:
        from cleveragents.app.registry import (
            RegistryService,
            ResourceRegistryService,
            actor_rows,
            project_rows,
            resource_rows,
        )

        # A published agent's card skills; the backend's own card lists its tools, listed anyway.
        skills = self.agent_card_service.spec.skills if card is not None else ()
        self.registry_service: RegistryService = RegistryService(
            self.action_registry, self.tool_registry,
            actors=actor_rows(known_providers(), self.config.actors, self.settings.default_actor),
            projects=project_rows(self.config.projects, self.workspace),
            agent_skills=[{"id": s.id, "name": s.name, "description": s.description, "tags": s.tags,
                           "examples": s.examples} for s in skills],
        )
        self.resource_registry_service: ResourceRegistryService = ResourceRegistryService(
            resource_rows(self.config.resources, self.workspace))

    @property
    def services(self) -> dict[str, object]:
        """The facade's service map, by the names the method table gives."""
        return {
            "session_service": self.session_service,
            "health_service": self.health_service,
            "event_queue": self.event_queue,
            "task_service": self.task_service,
            "plan_lifecycle_service": self.plan_service,
            "tool_registry": self.tool_registry,
            "registry_service": self.registry_service,
            "resource_registry_service": self.resource_registry_service,
            "agent_card_service": self.agent_card_service,
            "context_service": self.context_service,
        }

    async def start(self) -> None:
        """Repair what a crash left (an interrupted apply, tasks that were running)
        before the first request is served. Only the process that owns the state
        directory repairs: when another live process uses it (an editor's server beside
        an ``agents`` command), nothing was interrupted and its work is its own."""
        if self.settings.store is not None:
            from cleveragents.infra.store.postgres import PostgresStore

            assert isinstance(self.store, PostgresStore)
            await self.store.open()  # connect and migrate before the first request
            self._sweeping = asyncio.ensure_future(self._sweep_gone_replicas())
        await self.plan_service.recover()
        await self.task_service.recover()
        if self.config.shell.get("sandbox") == "off":
            logger.warning("the configuration turns the command sandbox off ([shell] sandbox = \"off\" in %s): "
                           "shell.run runs commands unconfined, on the workspace on disk",
                           ", ".join(str(path) for path in self.config.files))

    def stopping(self) -> None:
        """The server is about to cancel its requests and close (``PlanLifecycleService.stopping``)."""
        self.plan_service.stopping()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._sweeping is not None:
            self._sweeping.cancel()
        await self.task_service.aclose()
        await self.plan_service.aclose()
        await self.push_sender.aclose()
        await self.model_clients.aclose()
        await self.agent_connections.aclose()
        self._webhooks.close()
        self.tool_runner.close()
        self.bridge.stop()
        self.event_queue.close()
        await self.store.close()
        self._release_owner()
        self._remove_scratch()

    async def sweep_gone_replicas(self) -> None:
        """Fail the tasks that replicas gone since (killed, say) were running."""
        from cleveragents.infra.store.postgres import PostgresStore

        assert isinstance(self.store, PostgresStore)
        await self.task_service.fail_interrupted(await self.store.tasks.orphaned_tasks())

    async def _sweep_gone_replicas(self) -> None:
        while True:
            await asyncio.sleep(self.settings.replica_sweep_seconds)
            try:
                await self.sweep_gone_replicas()
            except Exception as exc:  # the database away for a while: the next round tries again
                logger.warning("the sweep for the tasks of stopped replicas failed: %s", exc)

    def close(self) -> None:
        """Close from synchronous code (no running loop)."""
        if self._closed:
            return
        self._closed = True
        self.tool_runner.close()
        self.bridge.stop()
        self.event_queue.close()
        self.store.close_sync()
        self._release_owner()
        self._remove_scratch()

    def _owns_state(self) -> bool:
        """Blocking: take (or hold) the state directory's owner lock. In memory mode the
        state is this process's alone."""
        if self.settings.memory:
            return True
        if self._owner is None:
            from cleveragents.infra.state_dir import StateDirOwner

            self._owner = StateDirOwner(self.settings.resolved_state_dir)
        return self._owner.try_acquire()

    def _release_owner(self) -> None:
        if self._owner is not None:
            self._owner.release()

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
