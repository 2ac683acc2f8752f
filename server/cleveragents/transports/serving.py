"""What every transport's entry point shares: the server options and the log setup.

Light on purpose: the stdio entry point imports it before anything heavy.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TextIO

from cleveragents.transports import output_limit
from cleveragents.transports.stderr_log import StderrLog, stray_output

DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024  # a stdio frame's body, an HTTP request's


def configure_logging(level: str) -> None:
    from cleveragents.transports import redaction

    redaction.register_environment(dict(os.environ))
    handler = _stderr_handler()
    handler.setFormatter(redaction.RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # pygls logs whole message bodies at INFO; keep them out unless debugging.
    if root.level > logging.DEBUG:
        logging.getLogger("pygls").setLevel(logging.WARNING)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", type=Path, help="workspace root (default: the client's root, else the cwd)")
    parser.add_argument("--state-dir", type=Path, help="where the state database lives (default: <workspace>/.cleveragents)")
    parser.add_argument("--memory", action="store_true", help="keep all state in memory (nothing is written)")
    parser.add_argument("--store", metavar="URL",
                        help="keep the state in PostgreSQL (postgresql://user@host:5432/db; needs the postgresql "
                             "extra) instead of SQLite under the state directory (default: $CLEVERAGENTS_STORE)")
    parser.add_argument("--max-terminal-tasks", type=int, metavar="N",
                        help="finished tasks kept before the oldest are evicted (default: 10000)")
    parser.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE, metavar="BYTES",
                        help="largest message accepted (default: %(default)s)")
    parser.add_argument("--max-output-buffer", type=int, default=None, metavar="BYTES",
                        help="stdio: output kept for a client that doesn't read before the server gives up on it "
                             f"(default: ${output_limit.MAX_OUTPUT_BUFFER_ENV}, else "
                             f"{output_limit.DEFAULT_MAX_OUTPUT_BUFFER})")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        type=str.upper, help="stderr log level (default: %(default)s)")


def _stderr_handler() -> logging.Handler:
    """Lines written by a thread of their own (``stderr_log``), so an unread stderr
    can't block the caller; one handler a process. A stderr with no file descriptor
    (an embedding host's stream object) is written to where the line is logged."""
    global _handler
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return logging.StreamHandler(sys.stderr)
    if _handler is None or _handler.fd != fd:
        _handler = StderrLog(sys.stderr)
    return _handler


def queued_stderr() -> TextIO:
    """``sys.stdout`` and ``sys.stderr`` once stdout carries the protocol: stderr, through
    the log handler's queue when ``configure_logging`` installed one."""
    return stray_output(_handler) if _handler is not None else sys.stderr


_handler: StderrLog | None = None
