"""Health checks answered before the services are up.

An editor's first A2A request is usually ``_cleveragents/health/check``, and the
services' modules (the models, the store, the actors) take a few hundred milliseconds
to load. What the health check reports needs none of them: the version, the uptime,
and whether the store answers. So, just before the container is built, the store's
file is opened on its own (``container.configured.early_health_service``, a
``SqliteProbe``: created and migrated as the store opens it, in the same worker
thread, so the two never migrate at once), and health checks
are answered from a ``HealthService`` on it until the services are up. The
container's health service goes on from the same start (``started_at``, the uptime).

Only where nothing could make the services' answer differ: the SQLite store under
the workspace (no ``--memory``, no PostgreSQL), no configuration file (one could move
the store, or be broken: then the services' error is the answer), tracing off (the
facade makes the spans), a workspace that exists, and a request with no params
beyond ``{}`` on a connection with no extensions. Anything else waits for the
services, as before.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, Protocol

from cleveragents.transports.lsp.calls import WireResponse

if TYPE_CHECKING:
    from collections.abc import Callable

    from cleveragents.config import Settings
    from cleveragents.transports.runtime import ServiceRuntime

logger = logging.getLogger("cleveragents.lsp")

HEALTH_CHECK = "_cleveragents/health/check"


class HealthService(Protocol):
    """What is used here of ``app.health.HealthService`` (built by the container)."""

    @property
    def started(self) -> tuple[float, str]: ...

    async def check(self) -> dict[str, Any]: ...


class EarlyHealth:
    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._health: asyncio.Future[HealthService | None] = self._loop.create_future()
        self._close_probe: Callable[[], None] | None = None

    def before_build(self, settings: Settings, options: dict[str, Any]) -> None:
        """In the services' worker thread, before the container is built: open the
        probe, and have the container's health service start where its own did."""
        from cleveragents.container.configured import early_health_service

        health = None
        try:
            opened = early_health_service(settings)
        except Exception as exc:  # the store's own opening reports it
            logger.debug("no early health check: %s", exc)
            opened = None
        if opened is not None:
            health, self._close_probe = opened
            options["health_started"] = health.started
        self._loop.call_soon_threadsafe(self._settle, health)

    def _settle(self, health: HealthService | None) -> None:
        if not self._health.done():
            self._health.set_result(health)

    def services_started(self, starting: asyncio.Future[Any]) -> None:
        """The services are up (or failed to start): the store has the file now."""
        self._settle(None)
        if self._close_probe is not None:
            close, self._close_probe = self._close_probe, None
            # Off the loop: when the store failed to open, this may be the file's last
            # connection, and closing that one checkpoints the WAL.
            self._loop.run_in_executor(None, close)

    @staticmethod
    def takes(method: str, params: Any, extensions: tuple[str, ...]) -> bool:
        return method == HEALTH_CHECK and (params is None or params == {}) and not extensions

    async def answer(self, runtime: ServiceRuntime, msg_id: Any) -> WireResponse | None:
        """The health check's answer from the probe, or ``None`` once the services
        are up (or when there is no probe): they answer it then."""
        waiting: set[asyncio.Future[Any]] = {self._health, runtime.start()}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        health = self._health.result() if self._health.done() else None
        if health is None or runtime.ready is not None:
            return None
        report = await health.check()
        logger.debug("answering a health check before the services are up")
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": report}, separators=(",", ":"),
                          ensure_ascii=False)
        return WireResponse(body=body.encode("utf-8"))
