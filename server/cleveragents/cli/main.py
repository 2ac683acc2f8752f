"""`agents`: the command line. Each command is a thin layer over one A2A method.

This module builds the parser and dispatches; each command group lives in its own
module. Only argparse is imported before a command runs, so ``--help`` and usage
errors are instant; the backend is imported when it is needed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cleveragents._version import __version__
from cleveragents.cli import health, plans, registry, send, serve, sessions, store

# Options every command takes, before or after its name.
GLOBAL_DEFAULTS: dict[str, Any] = {"json": False, "server": None, "token": None, "workspace": None,
                                   "state_dir": None, "memory": False, "timeout": 300.0, "log_level": "ERROR"}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _global_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    group = common.add_argument_group("backend and output")
    group.add_argument("--json", action="store_true", help="print the raw result as JSON (for scripts)")
    group.add_argument("--server", metavar="URL", help="a remote CleverAgents server (default: a local backend)")
    group.add_argument("--token", metavar="TOKEN",
                       help="the remote server's token, if it wants one (better: env CLEVERAGENTS_TOKEN)")
    group.add_argument("--timeout", type=float, metavar="SECONDS",
                       help="remote backend: how long one call may take (default: 300)")
    group.add_argument("--workspace", type=Path, help="local backend: the workspace root (default: the current directory)")
    group.add_argument("--state-dir", type=Path, help="local backend: the state directory (default: <workspace>/.cleveragents)")
    group.add_argument("--memory", action="store_true", help="local backend: keep state in memory (nothing persists)")
    group.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
                       help="the backend's log on stderr: debug, info, warning or error (default: error; "
                            "a failure is one line, debug adds its traceback)")
    return common


def build_parser(with_http: bool = False) -> argparse.ArgumentParser:
    common = _global_options()
    parser = argparse.ArgumentParser(
        prog="agents", parents=[common],
        description="CleverAgents command line: every command is one A2A call to a local backend "
                    "(the current directory's workspace) or to a remote one (--server).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    sessions.register(commands, common)
    plans.register(commands, common)
    registry.register(commands, common)
    health.register(commands, common)
    send.register(commands, common)
    serve.register(commands, with_http=with_http)
    store.register(commands)
    return parser


def _wants_http(argv: Sequence[str]) -> bool:
    """``serve --http``, or ``serve --grpc-port N`` (the gRPC binding comes with HTTP, which serves the card)."""
    if "serve" not in argv:
        return False
    after = list(argv)[list(argv).index("serve") + 1:]
    return any(arg == "--http" or arg == "--grpc-port" or arg.startswith("--grpc-port=") for arg in after)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(with_http=_wants_http(argv))
    except serve.HttpUnavailable as exc:
        sys.stderr.write(f"agents: {exc}\n")
        return 2
    args = parser.parse_args(argv)
    for key, value in GLOBAL_DEFAULTS.items():
        if not hasattr(args, key):
            setattr(args, key, value)
    if args.token is None:
        args.token = os.environ.get("CLEVERAGENTS_TOKEN")
    if getattr(args, "serve", None) is not None:
        code: int = args.serve(args)
        return code
    from cleveragents.cli.run import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
