"""The composition root: concrete infrastructure wired into the services.

Every entry point (stdio server, CLI, tests) builds its services here, so they are
wired the same way everywhere.
"""

from __future__ import annotations

import logging
from typing import Any

from cleveragents.config import Settings

logger = logging.getLogger(__name__)

# Actor providers that exist in this build (the tasks and actors work add them).
ACTOR_PROVIDERS: frozenset[str] = frozenset()


class Container:
    """Owns the services and their lifetimes. Building it opens the store (blocking)."""

    def __init__(self, settings: Settings | None = None):
        from cleveragents.a2a.events import A2aEventQueue, EventBusBridge
        from cleveragents.app.health import HealthService
        from cleveragents.app.sessions import SessionService
        from cleveragents.domain.events import EventBus

        self.settings = settings or Settings()
        self.workspace = self.settings.resolved_workspace
        self.store = self._open_store()
        self.event_bus = EventBus()
        self.event_queue = A2aEventQueue(self.settings.event_buffer)
        self.bridge = EventBusBridge(self.event_bus, self.event_queue).start()
        self.session_service = SessionService(self.store, self.event_bus, self.settings.default_actor)
        self.health_service = HealthService(
            self.store, self.workspace, [self.settings.default_actor], ACTOR_PROVIDERS
        )
        self._closed = False

    def _open_store(self) -> Any:
        if self.settings.memory:
            from cleveragents.infra.store.memory import MemoryStore

            return MemoryStore()
        from cleveragents.infra.store.sqlite import SqliteStore

        state_dir = self.settings.resolved_state_dir
        logger.info("opening the state store in %s", state_dir)
        return SqliteStore.open_in(state_dir)

    @property
    def services(self) -> dict[str, Any]:
        """The facade's service map (seed 000's keys, plus the ones added since)."""
        return {
            "session_service": self.session_service,
            "health_service": self.health_service,
            "event_queue": self.event_queue,
        }

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.bridge.stop()
        self.event_queue.close()
        await self.store.close()

    def close(self) -> None:
        """Close from synchronous code (no running loop)."""
        if self._closed:
            return
        self._closed = True
        self.bridge.stop()
        self.event_queue.close()
        self.store.close_sync()
