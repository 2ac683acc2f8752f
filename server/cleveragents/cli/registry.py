"""`agents tool|resource|actor|skill|action list`: the registry methods (`_cleveragents/registry/*`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from cleveragents.cli.output import Output, table

REGISTRY = "_cleveragents/registry/"
# Columns shown first when a registry's entries have them; the rest are left to --json.
PREFERRED = ("name", "namespace", "type", "type_name", "provider", "status", "source", "description")


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    keys = [k for k in PREFERRED if any(k in row for row in rows)]
    if keys:
        return keys
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(k for k, v in row.items() if not isinstance(v, dict | list)))
    return list(seen)[:6]


def _render(key: str, columns: Sequence[str] | None = None, shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
            ) -> Any:
    def render(result: dict[str, Any]) -> str:
        rows = [r if isinstance(r, dict) else {"name": r} for r in result.get(key) or []]
        rows = [shown(r) for r in rows] if shown else rows
        return table(rows, list(columns) if columns else _columns(rows), empty=f"no {key}")

    return render


def _lister(kind: str, columns: Sequence[str] | None = None,
            shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None, **param_names: str) -> Any:
    async def handler(backend: Any, args: argparse.Namespace, out: Output) -> None:
        params = {wire: getattr(args, attr) for attr, wire in param_names.items() if getattr(args, attr) is not None}
        result = await backend.call(f"{REGISTRY}{kind}/list", params)
        out.result(result, _render(f"{kind}s", columns, shown))

    return handler


def _action_row(action: dict[str, Any]) -> dict[str, Any]:
    """An action's arguments as `agents plan use --arg` names them; [optional] ones bracketed."""
    names = [a.get("name", "?") if a.get("required") else f"[{a.get('name', '?')}]"
             for a in action.get("arguments") or [] if isinstance(a, dict)]
    return {**action, "arguments": " ".join(names) or "-"}


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    def group(kind: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        parent = commands.add_parser(kind, help=help_text, description=help_text)
        verbs = parent.add_subparsers(dest="verb", metavar="VERB", required=True)
        p: argparse.ArgumentParser = verbs.add_parser("list", parents=[common], help=f"list {kind}s ({kind}/list)")
        p.set_defaults(handler=handler)
        return p

    p = group("tool", "the tools plans and actors can call",
              _lister("tool", ("name", "namespace", "description"), namespace="namespace"))
    p.add_argument("--namespace", metavar="NS", help="only tools in this namespace, e.g. fs")
    p = group("resource", "registered resources", _lister("resource", type="type_name"))
    p.add_argument("--type", metavar="TYPE", help="only resources of this type, e.g. repository")
    group("actor", "the actors sessions can use", _lister("actor"))
    group("skill", "registered skills", _lister("skill"))
    group("action", "the actions plans are made from (agents plan use ACTION)",
          _lister("action", ("name", "arguments", "description"), _action_row))
