"""The services behind every transport: one Container and its facade, built on first need.

A transport asks ``await runtime.facade()`` for each request; the first call starts
the services, and a server may call ``start()`` earlier so the first request doesn't
wait. Building a container opens the store (blocking) and imports the models, so it
and its facade are built in a worker thread. A runtime given a container serves it:
the caller started it and closes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cleveragents.config import Settings

if TYPE_CHECKING:  # heavy: loaded with the services, in the worker thread
    from cleveragents.a2a.facade import A2ALocalFacade

logger = logging.getLogger("cleveragents.runtime")


class ServiceRuntime:
    """``settings`` may change until the services start (the stdio client names its
    workspace in ``initialize``); ``started`` says whether they have."""

    def __init__(self, container: Any = None, *, settings: Settings | None = None,
                 container_options: dict[str, Any] | None = None,
                 before_build: Callable[[Settings, dict[str, Any]], None] | None = None):
        self._given = container
        self.settings = settings
        self._options = container_options or {}
        # Run in the worker thread, before the container is built with these settings and
        # options (which it may add to): the stdio server's early health (``lsp/early.py``).
        self._before_build = before_build
        self._container: Any = None
        self._starting: asyncio.Future[A2ALocalFacade] | None = None
        # The started facade: read without a suspension on every request.
        self.ready: A2ALocalFacade | None = None

    @property
    def started(self) -> bool:
        return self._starting is not None

    @property
    def container(self) -> Any:
        return self._container

    def start(self) -> asyncio.Future[A2ALocalFacade]:
        """Start the services (once); call it from the event loop."""
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        return self._starting

    async def facade(self) -> A2ALocalFacade:
        if self.ready is not None:
            return self.ready
        # Shielded: a request that goes away must not cancel the startup.
        return await asyncio.shield(self.start())

    async def _start(self) -> A2ALocalFacade:
        if self._given is not None:
            from cleveragents.a2a.facade import A2ALocalFacade

            container, facade = self._given, A2ALocalFacade(self._given)
        else:
            container, facade = await asyncio.to_thread(
                _build, self.settings or Settings.from_env(), self._options, self._before_build)
            await container.start()
        self._container = container
        self.ready = facade
        return facade

    def stopping(self) -> None:
        """Call before cancelling the requests at a stop (``Container.stopping``)."""
        if self._container is not None:
            self._container.stopping()

    async def aclose(self) -> None:
        """Close what was started: the facade, and the container when it is ours."""
        if self._starting is None:
            return
        try:
            facade = await self._starting
        except (Exception, asyncio.CancelledError):
            logger.exception("the services failed to start")
            return
        finally:
            self._starting = None
        self.ready = None
        if self._given is None and self._container is not None:
            await self._container.aclose()
        facade.close()
        self._container = None


def stopped_by_signal() -> bool:
    """Whether the task running this is being cancelled: a server's serving task is
    only when a stop signal arrived (``lsp/main.py``), and then its close gives running
    requests no grace."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _build(settings: Settings, options: dict[str, Any],
           before: Callable[[Settings, dict[str, Any]], None] | None = None) -> tuple[Any, A2ALocalFacade]:
    if before is not None:
        options = dict(options)
        before(settings, options)
    from cleveragents.a2a.facade import A2ALocalFacade
    from cleveragents.container import Container

    container = Container(settings, **options)
    return container, A2ALocalFacade(container)
