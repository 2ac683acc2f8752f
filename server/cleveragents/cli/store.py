"""`agents store migrate`: bring a PostgreSQL database's schema up to this version
before any server starts on it (the servers also do it at start). It works on the
database directly, not through a backend."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

PROG = "agents store migrate"


def register(commands: Any) -> None:
    p = commands.add_parser("store", help="the state store (PostgreSQL): migrate its schema",
                            description="The PostgreSQL state store shared by HTTP replicas (docs/deploy.md).")
    actions = p.add_subparsers(dest="store_command", metavar="COMMAND")
    actions.required = True
    migrate = actions.add_parser(
        "migrate", help="apply the schema migrations this version has and the database lacks",
        description="Apply the PostgreSQL store's missing schema migrations, each once, then print the schema "
                    "version. Servers do the same at start; run it alone before a rolling upgrade.")
    migrate.add_argument("--store", metavar="URL",
                         help="the database (postgresql://user@host:5432/db; default: $CLEVERAGENTS_STORE)")
    migrate.set_defaults(serve=_migrate)  # runs on its own, like `serve`: no backend


def _migrate(args: argparse.Namespace) -> int:
    url = getattr(args, "store", None) or os.environ.get("CLEVERAGENTS_STORE")
    if not url:
        sys.stderr.write(f"{PROG}: name the database: --store postgresql://... or CLEVERAGENTS_STORE\n")
        return 2
    from cleveragents.container.configured import migrate_store

    try:
        version = migrate_store(url)
    except ValueError as exc:  # not a PostgreSQL URL, or the extra is missing
        sys.stderr.write(f"{PROG}: {exc}\n")
        return 2
    except RuntimeError as exc:  # unreachable, refused, or a newer schema
        sys.stderr.write(f"{PROG}: {exc}\n")
        return 1
    sys.stdout.write(f"schema version {version}\n")
    return 0
