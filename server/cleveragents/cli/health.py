"""`agents health check` and `agents diagnostics run` (`_cleveragents/health/check`,
`_cleveragents/diagnostics/run`). Both exit 1 when the status is not ``ok``."""

from __future__ import annotations

import argparse
from typing import Any

from cleveragents.cli.output import EXIT_ERROR, Output, fields, table

CHECKS = ("store", "workspace", "actors")


def _verdict(result: dict[str, Any]) -> int | None:
    return None if result.get("status") == "ok" else EXIT_ERROR


async def check(backend: Any, args: argparse.Namespace, out: Output) -> int | None:
    result = await backend.call("_cleveragents/health/check", {})

    def render(r: dict[str, Any]) -> str:
        store = r.get("store") or {}
        shown = {**r, "store": f"{store.get('backend', '?')} ({'ok' if store.get('ok') else 'not ok'})"}
        return fields(shown, ("status", "version", "uptime_seconds", "started_at", "store"))

    out.result(result, render)
    return _verdict(result)


async def diagnostics(backend: Any, args: argparse.Namespace, out: Output) -> int | None:
    result = await backend.call("_cleveragents/diagnostics/run", {"checks": args.check} if args.check else {})

    def render(r: dict[str, Any]) -> str:
        rows = table(r.get("checks", []), ["name", "status", ("duration_ms", "ms"), "detail"], empty="no checks")
        return f"{rows}\nstatus: {r.get('status')}"

    out.result(result, render)
    return _verdict(result)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parent = commands.add_parser("health", help="is the backend alive", description="Liveness of the backend.")
    verbs = parent.add_subparsers(dest="verb", metavar="VERB", required=True)
    verbs.add_parser("check", parents=[common], help="version, uptime, store (health/check)").set_defaults(handler=check)

    parent = commands.add_parser("diagnostics", help="check the store, the workspace and the actors",
                                 description="Diagnostics of the backend.")
    verbs = parent.add_subparsers(dest="verb", metavar="VERB", required=True)
    p = verbs.add_parser("run", parents=[common], help="run the checks and report each (diagnostics/run)")
    p.add_argument("--check", action="append", choices=CHECKS, help="run only this check (repeatable)")
    p.set_defaults(handler=diagnostics)
