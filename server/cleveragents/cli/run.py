"""Runs one parsed command against its backend and turns failures into exit codes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from cleveragents.cli.backend import CallError, open_backend
from cleveragents.cli.output import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, Output


async def _run(args: argparse.Namespace, out: Output) -> int:
    try:
        async with open_backend(args) as backend:
            code = await args.handler(backend, args, out)
    except CallError as exc:
        return out.error(exc)
    return EXIT_OK if code is None else code


def run(args: argparse.Namespace) -> int:
    from cleveragents.transports.serving import configure_logging

    # A failure is reported as the command's one line; the log below it is for --log-level.
    configure_logging(args.log_level)
    out = Output(args.json)
    try:
        return asyncio.run(_run(args, out))
    except KeyboardInterrupt:
        sys.stderr.write("agents: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # one line, not a traceback; the log has the detail
        logging.getLogger("cleveragents.cli").debug("command failed", exc_info=True)
        sys.stderr.write(f"agents: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}\n")
        return EXIT_ERROR
