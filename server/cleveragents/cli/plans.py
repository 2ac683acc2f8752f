"""`agents plan ...`: the plan lifecycle methods (`_cleveragents/plan/*`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cleveragents.cli.output import Output, ProgressBar, fields, page_table

PLAN = "_cleveragents/plan/"
STATE_FIELDS = ("plan_id", "phase", "state", "action_name", "automation_profile", "allowed_actions", "reason", "files")


def parse_argument(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` gives a string; ``KEY:=JSON`` a typed value (number, boolean, list, ...)."""
    key, sep, value = text.partition("=")
    if not sep or not key or key == ":":
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE or KEY:=JSON, got {text!r}")
    if key.endswith(":"):
        try:
            return key[:-1], json.loads(value)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"{key[:-1]}: not JSON ({exc.msg})") from None
    return key, value


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _state(result: dict[str, Any]) -> str:
    return fields(result, STATE_FIELDS)


def _progress(args: argparse.Namespace) -> ProgressBar | None:
    wanted = args.progress if args.progress is not None else sys.stderr.isatty()
    return ProgressBar() if wanted and not args.json else None


async def _call_with_progress(backend: Any, method: str, params: dict[str, Any], args: argparse.Namespace) -> Any:
    bar = _progress(args)
    try:
        return await backend.call(method, params, progress=bar)
    finally:
        if bar is not None:
            bar.close()


async def use(backend: Any, args: argparse.Namespace, out: Output) -> None:
    arguments = {**(args.arguments or {}), **dict(args.arg or [])}
    params: dict[str, Any] = {"action_name": args.action_name, "arguments": arguments}
    if args.automation_profile:
        params["automation_profile"] = args.automation_profile
    if args.session:
        params["session_id"] = args.session
    out.result(await backend.call(PLAN + "use", params), _state)


async def execute(backend: Any, args: argparse.Namespace, out: Output) -> None:
    params = {"plan_id": args.plan_id, "wait": not args.no_wait}
    out.result(await _call_with_progress(backend, PLAN + "execute", params, args), _state)


async def apply(backend: Any, args: argparse.Namespace, out: Output) -> None:
    params = {"plan_id": args.plan_id, "force": args.force}
    out.result(await _call_with_progress(backend, PLAN + "apply", params, args), _state)


async def correct(backend: Any, args: argparse.Namespace, out: Output) -> None:
    params: dict[str, Any] = {"plan_id": args.plan_id, "wait": not args.no_wait}
    for key in ("guidance", "arguments"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    if args.decision:
        params["decision_id"] = args.decision
    out.result(await _call_with_progress(backend, PLAN + "correct", params, args), _state)


async def rollback(backend: Any, args: argparse.Namespace, out: Output) -> None:
    out.result(await backend.call(PLAN + "rollback", {"plan_id": args.plan_id, "force": args.force}), _state)


def _simple(verb: str) -> Any:
    async def handler(backend: Any, args: argparse.Namespace, out: Output) -> None:
        out.result(await backend.call(PLAN + verb, {"plan_id": args.plan_id}), _state)

    return handler


def _render_diff(result: dict[str, Any]) -> str:
    stats = result.get("stats") or {}
    summary = f"{stats.get('files', 0)} file(s), +{stats.get('additions', 0)} -{stats.get('deletions', 0)}"
    return (result.get("diff") or "") + summary if result.get("diff") else "no changes"


async def diff(backend: Any, args: argparse.Namespace, out: Output) -> None:
    out.result(await backend.call(PLAN + "diff", {"plan_id": args.plan_id}), _render_diff)


def _render_tree(result: dict[str, Any]) -> str:
    lines = [f"plan {result.get('plan_id')}  {result.get('phase')}/{result.get('state')}"]

    def walk(nodes: list[dict[str, Any]], depth: int) -> None:
        for node in nodes:
            summary = f" - {node['summary']}" if node.get("summary") else ""
            lines.append(f"{'  ' * depth}- {node.get('decision_id')} {node.get('step_id')} [{node.get('tool')}] "
                         f"{node.get('outcome')}{summary}")
            walk(node.get("children") or [], depth + 1)

    walk(result.get("roots") or [], 1)
    if len(lines) == 1:
        lines.append("  (no decisions yet)")
    return "\n".join(lines)


async def tree(backend: Any, args: argparse.Namespace, out: Output) -> None:
    out.result(await backend.call(PLAN + "tree", {"plan_id": args.plan_id}), _render_tree)


async def list_plans(backend: Any, args: argparse.Namespace, out: Output) -> None:
    params: dict[str, Any] = {"limit": args.limit}
    if args.session:
        params["session_id"] = args.session
    if args.cursor:
        params["cursor"] = args.cursor

    def render(r: dict[str, Any]) -> str:
        return page_table(r, "plans", ["plan_id", ("action_name", "action"), "phase", "state",
                                       ("automation_profile", "profile"), "updated_at"], empty="no plans")

    out.result(await backend.call(PLAN + "list", params), render)


def _progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="draw a progress bar on stderr (default: when stderr is a terminal)")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    plan = commands.add_parser("plan", help="plan lifecycle: use, execute, diff, apply, rollback, ...",
                               description="Plans: made from an action, executed in an overlay, applied to the workspace.")
    verbs = plan.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, help_text: str, handler: Any, plan_id: bool = True) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = verbs.add_parser(name, parents=[common], help=help_text, description=help_text)
        if plan_id:
            p.add_argument("plan_id", metavar="PLAN_ID")
        p.set_defaults(handler=handler)
        return p

    p = verb("use", "create a plan from an action (plan/use)", use, plan_id=False)
    p.add_argument("action_name", metavar="ACTION_NAME")
    p.add_argument("--arg", "-a", action="append", type=parse_argument, metavar="KEY=VALUE",
                   help="an action argument (repeatable); KEY:=JSON for a typed value, e.g. ignore_case:=true")
    p.add_argument("--arguments", type=json_object, metavar="JSON", help="all arguments as one JSON object")
    p.add_argument("--automation-profile", choices=["manual", "supervised", "autonomous"],
                   help="which gates need approval (default: the backend's, supervised unless configured)")
    p.add_argument("--session", metavar="SESSION_ID", help="the session the plan belongs to")

    p = verb("execute", "run the plan's steps in its overlay (plan/execute)", execute)
    p.add_argument("--no-wait", action="store_true", help="answer at once, while the plan runs")
    _progress_option(p)
    verb("status", "the plan's phase and state (plan/status)", _simple("status"))
    verb("diff", "the overlay against the workspace, as a unified diff (plan/diff)", diff)
    p = verb("apply", "write the overlay into the workspace (plan/apply)", apply)
    p.add_argument("--force", action="store_true", help="write even over files changed on disk since execute")
    _progress_option(p)
    verb("cancel", "cancel the plan (plan/cancel)", _simple("cancel"))
    verb("tree", "the plan's decision tree (plan/tree)", tree)
    p = verb("correct", "correct a decision and re-execute from there (plan/correct)", correct)
    p.add_argument("--guidance", "-g", help="guidance for the corrected step")
    p.add_argument("--arguments", type=json_object, metavar="JSON", help="new step arguments, merged over the old")
    p.add_argument("--decision", metavar="DECISION_ID", help="the decision to correct (default: the last one)")
    p.add_argument("--no-wait", action="store_true", help="answer at once, while the plan re-runs")
    _progress_option(p)
    p = verb("rollback", "restore the workspace from the plan's checkpoint (plan/rollback)", rollback)
    p.add_argument("--force", action="store_true", help="restore even files changed on disk since the apply")
    p = verb("list", "plans, newest first (plan/list)", list_plans, plan_id=False)
    p.add_argument("--session", metavar="SESSION_ID", help="only this session's plans")
    p.add_argument("--limit", type=int, default=100, help="page size (default: %(default)s)")
    p.add_argument("--cursor", help="next page: the cursor the previous page printed")
