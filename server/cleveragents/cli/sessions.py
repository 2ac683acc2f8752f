"""`agents a2a session create|list|close`: the session methods (`session.*`)."""

from __future__ import annotations

import argparse
from typing import Any

from cleveragents.cli.output import Output, fields, page_table

SESSION_FIELDS = ("session_id", "status", "actor_name", "created_at", "closed_at")


async def create(backend: Any, args: argparse.Namespace, out: Output) -> None:
    params = {"actor_name": args.actor, "session_id": args.session_id}
    result = await backend.call("session.create", {k: v for k, v in params.items() if v is not None})
    out.result(result, lambda r: fields(r, SESSION_FIELDS))


async def list_sessions(backend: Any, args: argparse.Namespace, out: Output) -> None:
    params: dict[str, Any] = {"limit": args.limit}
    if args.status:
        params["status"] = args.status
    if args.cursor:
        params["cursor"] = args.cursor
    result = await backend.call("session.list", params)

    def render(r: dict[str, Any]) -> str:
        return page_table(r, "sessions", ["session_id", "status", ("actor_name", "actor"), "created_at"],
                          empty="no sessions")

    out.result(result, render)


async def close(backend: Any, args: argparse.Namespace, out: Output) -> None:
    result = await backend.call("session.close", {"session_id": args.session_id})
    out.result(result, lambda r: fields(r, SESSION_FIELDS))


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    a2a = commands.add_parser("a2a", help="A2A sessions", description="A2A sessions.")
    groups = a2a.add_subparsers(dest="a2a_group", metavar="GROUP", required=True)
    session = groups.add_parser("session", help="create, list and close sessions")
    verbs = session.add_subparsers(dest="verb", metavar="VERB", required=True)

    p = verbs.add_parser("create", parents=[common], help="create a session (session.create)")
    p.add_argument("--actor", metavar="PROVIDER/MODEL", help="the session's actor (default: local/default)")
    p.add_argument("--session-id", metavar="ID", help="make the call idempotent: an existing session is returned")
    p.set_defaults(handler=create)

    p = verbs.add_parser("list", parents=[common], help="list sessions, newest first (session.list)")
    p.add_argument("--status", choices=["active", "closed"], help="only sessions in this status")
    p.add_argument("--limit", type=int, default=100, help="page size (default: %(default)s)")
    p.add_argument("--cursor", help="next page: the cursor the previous page printed")
    p.set_defaults(handler=list_sessions)

    p = verbs.add_parser("close", parents=[common], help="close a session (session.close)")
    p.add_argument("session_id", metavar="SESSION_ID")
    p.set_defaults(handler=close)
