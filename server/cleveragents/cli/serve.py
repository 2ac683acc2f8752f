"""`agents serve`: the backend on stdio (LSP framing, the default) or over HTTP.

The HTTP transport is optional (the ``http`` extra); it is imported only for
``agents serve --http``, and its absence is one clear error line, exit 2.
"""

from __future__ import annotations

import argparse
from typing import Any

HTTP_MODULE = "cleveragents.transports.http.main"


class HttpUnavailable(Exception):
    """``agents serve --http`` in a build without the HTTP transport."""


def _http_module() -> Any:
    import importlib

    try:
        module = importlib.import_module(HTTP_MODULE)
    except ImportError as exc:
        raise HttpUnavailable(f"HTTP serving is not available: cannot import {HTTP_MODULE} ({exc})") from None
    if not all(hasattr(module, name) for name in ("add_http_arguments", "run_http", "missing_extra")):
        raise HttpUnavailable(f"HTTP serving is not available: {HTTP_MODULE} lacks add_http_arguments/run_http")
    if (problem := module.missing_extra()) is not None:
        raise HttpUnavailable(problem)
    return module


def _run_stdio(args: argparse.Namespace) -> int:
    from cleveragents.transports.lsp.main import run_stdio

    return run_stdio(args, die_of_stop_signal=True)


def _run_http(args: argparse.Namespace) -> int:
    code: int = _http_module().run_http(args)
    return code


def register(commands: Any, with_http: bool) -> None:
    from cleveragents.transports.serving import add_server_arguments

    p = commands.add_parser(
        "serve", help="serve the A2A backend (stdio by default, or --http)", conflict_handler="resolve",
        description="Serve the backend: on stdio with LSP framing (what editors start), or over HTTP with --http "
                    "(`agents serve --http --help` lists the HTTP options).")
    transport = p.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve on stdio (the default)")
    transport.add_argument("--http", action="store_true", help="serve over HTTP (--host, --port, ...)")
    add_server_arguments(p)
    if with_http:
        _http_module().add_http_arguments(p)
        p.set_defaults(serve=_run_http)
    else:
        p.set_defaults(serve=_run_stdio)
