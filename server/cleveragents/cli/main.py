"""`agents`: the command line. Each command is a thin layer over one A2A method."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cleveragents._version import __version__


def _build_parser() -> argparse.ArgumentParser:
    from cleveragents.transports.lsp.main import add_server_arguments

    parser = argparse.ArgumentParser(prog="agents", description="CleverAgents command line.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the A2A backend on stdio (LSP framing)")
    serve.add_argument("--stdio", action="store_true", help="the default transport")
    add_server_arguments(serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        from cleveragents.transports.lsp.main import run_stdio

        return run_stdio(args)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
