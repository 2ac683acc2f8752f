"""Serving the HTTP app with uvicorn: ``agents serve --http`` and
``python -m cleveragents.transports.http``.

``add_http_arguments`` adds the HTTP options to a parser that already has the
server options of ``transports/lsp/main.py`` (workspace, state dir, memory, log
level); ``run_http`` serves until interrupted and returns the exit code. Once the
socket is bound, one line ``listening on http://HOST:PORT`` goes to stderr, so a
caller that asked for port 0 learns the port.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from cleveragents.config import Settings
from cleveragents.transports import gc_policy

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("HTTP")
    group.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on (default: %(default)s)")
    group.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s; 0 picks a free one)")
    group.add_argument("--prefix", default="", help="URL prefix of every route, e.g. /api (default: none)")
    group.add_argument("--public-url", metavar="URL",
                       help="the JSON-RPC URL the agent card names, behind a proxy (default: from the first request)")
    group.add_argument("--auth-token", action="append", default=[], metavar="TOKEN",
                       help="accepted bearer token; repeat for several (env CLEVERAGENTS_AUTH_TOKENS, comma-separated)")
    group.add_argument("--api-key", action="append", default=[], metavar="KEY",
                       help="accepted API key; repeat for several (env CLEVERAGENTS_API_KEYS)")
    group.add_argument("--api-key-header", metavar="NAME", help="header carrying the API key (default: X-API-Key)")
    group.add_argument("--proxy-headers", action="store_true",
                       help="trust X-Forwarded-For/-Proto from --forwarded-allow-ips (behind a reverse proxy)")
    group.add_argument("--forwarded-allow-ips", default="127.0.0.1", metavar="IPS",
                       help="proxies whose forwarded headers are trusted (default: %(default)s)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        workspace=getattr(args, "workspace", None), state_dir=getattr(args, "state_dir", None),
        memory=getattr(args, "memory", False) or None, max_terminal_tasks=getattr(args, "max_terminal_tasks", None),
        auth_tokens=tuple(getattr(args, "auth_token", None) or ()) or None,
        api_keys=tuple(getattr(args, "api_key", None) or ()) or None,
        api_key_header=getattr(args, "api_key_header", None),
    )


async def serve_app(app: Any, host: str, port: int, *, log_level: str = "warning", proxy_headers: bool = False,
                    forwarded_allow_ips: str = "127.0.0.1", announce: bool = True) -> None:
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(), lifespan="on",
                            proxy_headers=proxy_headers, forwarded_allow_ips=forwarded_allow_ips,
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    if threading.current_thread() is threading.main_thread():
        # uvicorn shuts down gracefully on SIGTERM, then raises it again once done:
        # this handler makes that second one a plain return (exit 0, as on stdio).
        signal.signal(signal.SIGTERM, lambda *_: None)
    gc_policy.tune_for_serving()
    serving = asyncio.ensure_future(server.serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.01)
    if announce and server.started:
        bound_host, bound_port = server.servers[0].sockets[0].getsockname()[:2]
        sys.stderr.write(f"listening on http://{bound_host}:{bound_port}\n")
        sys.stderr.flush()
    await serving


def run_http(args: argparse.Namespace, settings: Settings | None = None,
             container_options: dict[str, Any] | None = None) -> int:
    from cleveragents.transports.http.app import build_app
    from cleveragents.transports.lsp.main import configure_logging

    log_level = getattr(args, "log_level", "WARNING")
    configure_logging(log_level)
    app = build_app(settings=settings or settings_from_args(args), container_options=container_options,
                    prefix=getattr(args, "prefix", ""), public_url=getattr(args, "public_url", None))
    try:
        asyncio.run(serve_app(app, args.host, args.port, log_level=log_level,
                              proxy_headers=getattr(args, "proxy_headers", False),
                              forwarded_allow_ips=getattr(args, "forwarded_allow_ips", "127.0.0.1")))
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:  # uvicorn exits this way when startup fails
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from cleveragents.transports.lsp.main import add_server_arguments

    parser = argparse.ArgumentParser(prog="cleveragents-http", description="The CleverAgents A2A backend over HTTP.")
    add_server_arguments(parser)
    add_http_arguments(parser)
    return run_http(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
