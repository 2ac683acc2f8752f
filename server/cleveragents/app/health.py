"""Health check and diagnostics."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cleveragents._version import __version__
from cleveragents.ids import utc_now

if TYPE_CHECKING:  # light at import: the stdio server checks health before the services load
    from cleveragents.app.ports import StoreHealth

logger = logging.getLogger(__name__)

CHECKS = ("store", "workspace", "actors")


class HealthService:
    def __init__(
        self, store: StoreHealth, workspace: Path, configured_actors: Iterable[str],
        actor_providers: Collection[str], started: tuple[float, str] | None = None,
    ):
        self._store = store
        self._workspace = workspace
        self._actors = tuple(configured_actors)
        self._providers = actor_providers
        # (monotonic clock, UTC text) of the start; given when health was checked before.
        self._started, self.started_at = started or (time.monotonic(), utc_now())

    @property
    def started(self) -> tuple[float, str]:
        return self._started, self.started_at

    async def check(self) -> dict[str, Any]:
        try:
            store = await self._store.ping()
        except Exception as exc:  # reported, not raised: this is what health is for
            logger.warning("health check: store failed: %s", exc)
            store = {"ok": False, "backend": self._store.backend, "error": type(exc).__name__}
        return {
            "status": "ok" if store.get("ok") else "degraded",
            "version": __version__,
            "uptime_seconds": round(time.monotonic() - self._started, 3),
            "started_at": self.started_at,
            "store": store,
        }

    async def diagnostics(self, checks: list[str] | None = None) -> dict[str, Any]:
        runners: dict[str, Callable[[], Awaitable[tuple[str, str, dict[str, Any]]]]] = {
            "store": self._check_store, "workspace": self._check_workspace, "actors": self._check_actors,
        }
        results = []
        for name in checks or CHECKS:
            started = time.perf_counter()
            try:
                status, detail, extra = await runners[name]()
            except Exception as exc:
                logger.exception("diagnostic %s failed", name)
                status, detail, extra = "error", f"{type(exc).__name__}: {exc}", {}
            results.append({
                "name": name, "status": status, "detail": detail,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2), **extra,
            })
        worst = max((_SEVERITY[r["status"]] for r in results), default=0)
        return {"status": _STATUS_BY_SEVERITY[worst], "version": __version__, "checks": results}

    async def _check_store(self) -> tuple[str, str, dict[str, Any]]:
        report = await self._store.check()
        unreadable = self._store.unreadable_records()
        extra = {"report": report, "unreadable": unreadable}
        if not report.get("ok"):
            return "error", f"{self._store.backend} store failed its check", extra
        if unreadable:
            return ("warning", f"{self._store.backend} store answers and is writable; {len(unreadable)} stored "
                    "record(s) can't be served and are skipped by lists (see unreadable)", extra)
        return "ok", f"{self._store.backend} store answers and is writable", extra

    async def _check_workspace(self) -> tuple[str, str, dict[str, Any]]:
        return await asyncio.to_thread(_workspace_report, self._workspace)

    async def _check_actors(self) -> tuple[str, str, dict[str, Any]]:
        actors = []
        for name in self._actors:
            provider = name.split("/", 1)[0]
            available = provider in self._providers
            actors.append({
                "actor_name": name, "provider": provider,
                "status": "ok" if available else "warning",
                "detail": "available" if available else f"no '{provider}' actor provider is installed",
            })
        missing = [a["actor_name"] for a in actors if a["status"] != "ok"]
        if not actors:
            return "warning", "no actors are configured", {"actors": actors}
        if missing:
            return "warning", f"not available: {', '.join(missing)}", {"actors": actors}
        return "ok", f"{len(actors)} actor(s) available", {"actors": actors}


_SEVERITY = {"ok": 0, "warning": 1, "error": 2}
_STATUS_BY_SEVERITY = {0: "ok", 1: "warning", 2: "error"}


def _workspace_report(root: Path) -> tuple[str, str, dict[str, Any]]:
    if not root.is_dir():
        return "error", "the workspace root is not a directory", {}
    if not os.access(root, os.R_OK | os.X_OK):
        return "error", "the workspace root is not readable", {}
    import tempfile  # not at the top: health is checked before the services load

    try:
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as exc:
        return "warning", f"the workspace root is not writable ({exc.strerror})", {"writable": False}
    return "ok", "the workspace root is readable and writable", {"writable": True}
