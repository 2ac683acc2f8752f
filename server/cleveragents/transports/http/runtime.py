"""The services behind the HTTP app: one Container and its facade, built on first need.

An app mounted inside another ASGI app may never see a lifespan event, so the
services start on the first request as well as at startup. Building the container
opens the store (blocking), so it is built in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from cleveragents.config import Settings

logger = logging.getLogger("cleveragents.http")


class Runtime:
    def __init__(self, container: Any = None, *, settings: Settings | None = None,
                 container_options: dict[str, Any] | None = None):
        self._given = container
        self._settings = settings
        self._options = container_options or {}
        self._facade: Any = None
        self._container: Any = None
        self._starting: asyncio.Future[Any] | None = None
        self._owned = container is None
        self.on_ready: list[Any] = []

    async def facade(self) -> Any:
        if self._facade is not None:
            return self._facade
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        # Shielded: a request that goes away must not cancel the startup.
        return await asyncio.shield(self._starting)

    async def _start(self) -> Any:
        from cleveragents.a2a.facade import A2ALocalFacade

        if self._given is not None:
            container = self._given
        else:
            from cleveragents.container import Container

            container = await asyncio.to_thread(Container, self._settings or Settings.from_env(), **self._options)
            await container.start()
        self._container = container
        facade = A2ALocalFacade(container)
        for callback in self.on_ready:
            callback(facade)
        self._facade = facade
        return facade

    @property
    def container(self) -> Any:
        return self._container

    async def aclose(self) -> None:
        if self._starting is None:
            return
        try:
            facade = await self._starting
        except Exception:
            logger.exception("the services failed to start")
            return
        finally:
            self._starting = None
        self._facade = None
        facade.close()
        if self._owned and self._container is not None:
            await self._container.aclose()
        self._container = None
