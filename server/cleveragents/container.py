"""The composition root: concrete infrastructure wired into the services.

Every entry point (stdio server, CLI, tests, a published agent) builds its services
here, so they are wired the same way everywhere.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cleveragents.config import Settings

logger = logging.getLogger(__name__)

# Actor providers that exist in this build (the actors work adds more).
ACTOR_PROVIDERS: frozenset[str] = frozenset({"local"})


def _guard_policy(policy: Any, workspace: Path, state_dir: Path) -> Any:
    """Plans never touch the state directory, wherever it is inside the workspace."""
    try:
        inside = state_dir.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return policy  # outside the workspace: the path guards keep plans away from it
    if inside in policy.protected or inside == ".":
        return policy
    return policy.with_overrides(protected=(*policy.protected, inside))


class Container:
    """Owns the services and their lifetimes. Building it opens the store (blocking).

    ``actor`` replaces the default local actor for agent tasks (a published
    ``Agent``); ``card`` is what describes the agent (``cleveragents.A2A``), giving
    the card's name, skills and extended-card callback.
    """

    def __init__(self, settings: Settings | None = None, *, actor: Any = None, card: Any = None):
        from cleveragents.a2a.events import A2aEventQueue, EventBusBridge
        from cleveragents.app.health import HealthService
        from cleveragents.app.sessions import SessionService
        from cleveragents.domain.events import EventBus

        self.settings = settings or Settings()
        self.workspace = self.settings.resolved_workspace
        self._scratch: Path | None = None
        self.store = self._open_store()
        self.event_bus = EventBus()
        self.event_queue = A2aEventQueue(self.settings.event_buffer)
        self.bridge = EventBusBridge(self.event_bus, self.event_queue).start()
        self.session_service = SessionService(self.store, self.event_bus, self.settings.default_actor)
        self.health_service = HealthService(
            self.store, self.workspace, [self.settings.default_actor], ACTOR_PROVIDERS
        )
        self._build_plans()
        self._build_tasks(actor, card)
        self._closed = False

    def _open_store(self) -> Any:
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
            self._scratch = Path(tempfile.mkdtemp(prefix="cleveragents-"))
        return self._scratch

    def _build_plans(self) -> None:
        from cleveragents.app.plans import PlanLifecycleService
        from cleveragents.app.registry import ActionRegistry, RegistryService, ToolRegistry
        from cleveragents.domain.guards import GuardPolicy
        from cleveragents.infra.actions import actions_fingerprint, load_actions
        from cleveragents.infra.tools.builtin import builtin_tools
        from cleveragents.infra.workspace.plan_workspace import PlanWorkspace

        self.guard_policy = _guard_policy(GuardPolicy(), self.workspace, self.blob_dir)
        self.plan_workspace = PlanWorkspace(self.workspace, self.blob_dir, self.guard_policy)
        self.tool_registry = ToolRegistry(builtin_tools())
        self.action_registry = ActionRegistry(
            lambda: load_actions(self.workspace), self.tool_registry, lambda: actions_fingerprint(self.workspace)
        )
        self.registry_service = RegistryService(self.action_registry)
        self.plan_service = PlanLifecycleService(
            self.store, self.plan_workspace, self.tool_registry, self.action_registry, self.event_bus,
            max_steps=self.guard_policy.max_steps,
        )

    def _build_tasks(self, actor: Any, card: Any) -> None:
        from cleveragents.a2a.card_service import AgentCardService
        from cleveragents.a2a.push import PushSender
        from cleveragents.app.context import ContextService
        from cleveragents.app.plan_gates import PlanGates
        from cleveragents.app.tasks import TaskService
        from cleveragents.domain.actor import ToolInfo
        from cleveragents.infra.actors.local import LocalActor
        from cleveragents.infra.webhooks import post_json

        tools = self.tool_registry
        self.actor = actor or LocalActor(
            tools=lambda: [tools.get(name) for name in tools.names()],
            view=self.plan_workspace.overlay, workspace=str(self.workspace),
        )

        infos: list[ToolInfo] = []

        def tool_infos() -> list[ToolInfo]:
            # The backend's tools, for its own actor; a published agent brings its own.
            if not infos:
                infos.extend(ToolInfo(t["name"], t["description"], t["input_schema"])
                             for t in tools.list_tools()["tools"])
            return infos

        self.push_sender = PushSender(post_json)
        self.task_service = TaskService(self.store, self.actor, tools=None if actor is not None else tool_infos,
                                        push=self.push_sender, router=PlanGates(self.plan_service))
        self.agent_card_service = AgentCardService.for_backend(card, self.tool_registry)
        self.context_service = ContextService(self.store, self.plan_workspace)

    @property
    def services(self) -> dict[str, Any]:
        """The facade's service map (seed 000's keys, plus the ones added since)."""
        return {
            "session_service": self.session_service,
            "health_service": self.health_service,
            "event_queue": self.event_queue,
            "task_service": self.task_service,
            "plan_lifecycle_service": self.plan_service,
            "tool_registry": self.tool_registry,
            "registry_service": self.registry_service,
            "agent_card_service": self.agent_card_service,
            "context_service": self.context_service,
        }

    async def start(self) -> None:
        """Repair what a crash left (an interrupted apply, tasks that were running)
        before the first request is served."""
        await self.plan_service.recover()
        await self.task_service.recover()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.task_service.aclose()
        await self.plan_service.aclose()
        await self.push_sender.aclose()
        self.bridge.stop()
        self.event_queue.close()
        await self.store.close()
        self._remove_scratch()

    def close(self) -> None:
        """Close from synchronous code (no running loop)."""
        if self._closed:
            return
        self._closed = True
        self.bridge.stop()
        self.event_queue.close()
        self.store.close_sync()
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
