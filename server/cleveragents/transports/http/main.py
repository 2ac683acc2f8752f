"""Serving the HTTP app with uvicorn: ``agents serve --http`` and
``python -m cleveragents.transports.http``; with ``--grpc-port``, the gRPC binding
too (``transports/grpc/main.py``).

``add_http_arguments`` adds the HTTP options to a parser that already has the
server options of ``transports/serving.py`` (workspace, state dir, memory, log
level); ``run_http`` serves until interrupted and returns the exit code. Once the
socket is bound, one line ``listening on http://HOST:PORT`` goes to stderr, so a
caller that asked for port 0 learns the port. With no credential configured, a token
is made for the run and printed just before it (``credentials.py``).
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
from cleveragents.transports.http.connections import HttpLimits
from cleveragents.transports.http.credentials import credentials_for_serving, token_notice
from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# What the http extra adds to a base install; this module imports neither up front.
HTTP_EXTRA = ("starlette", "uvicorn", "sse_starlette")


def missing_extra() -> str | None:
    """Why HTTP serving can't start in this install (the http extra is missing), in
    one line that names the command to run; None when it can."""
    import importlib.util

    missing = [name for name in HTTP_EXTRA if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"HTTP serving is not available: the http extra is not installed (no {', '.join(missing)}); "
            'run pip install -e ".[http]" in the checkout, or pip install ' + " ".join(HTTP_EXTRA))


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("HTTP")
    group.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on (default: %(default)s)")
    group.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s; 0 picks a free one)")
    group.add_argument("--prefix", default="", help="URL prefix of every route, e.g. /api (default: none)")
    group.add_argument("--public-url", metavar="URL",
                       help="the JSON-RPC URL the agent card names, behind a proxy; its host is served too "
                            "(default: the address the server listens on)")
    group.add_argument("--auth-token", action="append", default=[], metavar="TOKEN",
                       help="accepted bearer token; repeat for several (env CLEVERAGENTS_AUTH_TOKENS, comma-separated; "
                            "default: a token made for the run, printed on stderr)")
    group.add_argument("--api-key", action="append", default=[], metavar="KEY",
                       help="accepted API key; repeat for several (env CLEVERAGENTS_API_KEYS)")
    group.add_argument("--api-key-header", metavar="NAME", help="header carrying the API key (default: X-API-Key)")
    group.add_argument("--no-auth", action="store_true",
                       help="serve without a credential (loopback addresses only)")
    group.add_argument("--allowed-host", action="append", default=[], metavar="HOST",
                       help="a Host header to serve besides loopback and the public URL's: NAME, NAME:PORT or *; "
                            "repeat for several (env CLEVERAGENTS_ALLOWED_HOSTS)")
    group.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                       help="a browser origin allowed to call, e.g. https://app.example; repeat for several "
                            "(env CLEVERAGENTS_CORS_ORIGINS; default: none)")
    group.add_argument("--push-allow-network", action="append", default=[], metavar="CIDR",
                       help="a non-public network push notifications may reach, e.g. 127.0.0.1/32; repeat for "
                            "several (env CLEVERAGENTS_PUSH_ALLOWED_NETWORKS; default: none)")
    group.add_argument("--proxy-headers", action="store_true",
                       help="trust X-Forwarded-For/-Proto from --forwarded-allow-ips (behind a reverse proxy)")
    group.add_argument("--forwarded-allow-ips", default="127.0.0.1", metavar="IPS",
                       help="proxies whose forwarded headers are trusted (default: %(default)s)")
    defaults = HttpLimits()
    group.add_argument("--header-timeout", type=float, default=defaults.header_timeout, metavar="SECONDS",
                       help="time for a request head to arrive (default: %(default)s)")
    group.add_argument("--body-timeout", type=float, default=defaults.body_timeout, metavar="SECONDS",
                       help="time for a request body to arrive (default: %(default)s)")
    group.add_argument("--keep-alive-timeout", type=float, default=defaults.keep_alive_timeout, metavar="SECONDS",
                       help="an idle connection is closed after this long (default: %(default)s)")
    group.add_argument("--max-connections", type=int, default=defaults.max_connections, metavar="N",
                       help="open connections at most (default: %(default)s)")
    from cleveragents.transports.http.oauth_options import add_oauth2_arguments

    add_oauth2_arguments(parser)
    from cleveragents.transports.grpc.main import add_grpc_arguments

    add_grpc_arguments(parser)


def _listed(args: argparse.Namespace, name: str) -> tuple[str, ...] | None:
    return tuple(getattr(args, name, None) or ()) or None


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings of the flags and the environment; ``ValueError`` (one line) for a
    bad OAuth2 flag or variable."""
    from cleveragents.transports.http.oauth_options import with_oauth2_options

    return with_oauth2_options(_settings(args), args)


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        workspace=getattr(args, "workspace", None), state_dir=getattr(args, "state_dir", None),
        memory=getattr(args, "memory", False) or None, store=getattr(args, "store", None),
        max_terminal_tasks=getattr(args, "max_terminal_tasks", None),
        auth_tokens=_listed(args, "auth_token"), api_keys=_listed(args, "api_key"),
        api_key_header=getattr(args, "api_key_header", None), allowed_hosts=_listed(args, "allowed_host"),
        cors_origins=_listed(args, "cors_origin"), push_allowed_networks=_listed(args, "push_allow_network"),
    )


def limits_from_args(args: argparse.Namespace) -> HttpLimits:
    defaults = HttpLimits()
    return HttpLimits(**{name: getattr(args, name, getattr(defaults, name)) for name in
                         ("header_timeout", "body_timeout", "keep_alive_timeout", "max_connections")})


async def serve_app(app: Any, host: str, port: int, *, log_level: str = "warning", proxy_headers: bool = False,
                    forwarded_allow_ips: str = "127.0.0.1", announce: bool = True,
                    limits: HttpLimits | None = None, token: str | None = None) -> None:
    """Serve ``app`` until interrupted. Once bound: the ``token`` made for this run (if
    any) and ``listening on http://HOST:PORT`` go to stderr."""
    import uvicorn

    # log_config=None: uvicorn's records (its access log included) go to our handler on
    # stderr, where secrets are redacted; its own config would print the access log on stdout.
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level.lower(), lifespan="on",
                            proxy_headers=proxy_headers, forwarded_allow_ips=forwarded_allow_ips,
                            timeout_graceful_shutdown=5, log_config=None,
                            **(limits or HttpLimits()).uvicorn_options())
    server = uvicorn.Server(config)
    from sse_starlette.sse import AppStatus

    # sse-starlette ends every stream once a signal has stopped a server, and nothing
    # resets that: a server started after one in the same process would end its streams
    # at once.
    AppStatus.should_exit = False
    if threading.current_thread() is threading.main_thread():
        # uvicorn shuts down gracefully on SIGTERM, then raises it again once done:
        # this handler makes that second one a plain return: a service stopped on purpose exits 0.
        signal.signal(signal.SIGTERM, lambda *_: None)
    gc_policy.tune_for_serving()
    serving = asyncio.ensure_future(server.serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.01)
    if announce and server.started:
        bound_host, bound_port = server.servers[0].sockets[0].getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        url = f"http://{shown}:{bound_port}"
        sys.stderr.write((token_notice(token, url) if token else "") + f"listening on {url}\n")
        sys.stderr.flush()
    await serving


def run_http(args: argparse.Namespace, settings: Settings | None = None,
             container_options: dict[str, Any] | None = None) -> int:
    from cleveragents.transports.http.app import build_app
    from cleveragents.transports.serving import configure_logging

    log_level = getattr(args, "log_level", "WARNING")
    configure_logging(log_level)
    try:
        limits = limits_from_args(args)
        settings, token = credentials_for_serving(settings or settings_from_args(args), args.host,
                                                  no_auth=getattr(args, "no_auth", False))
    except ValueError as exc:  # ServeRefused, or a limit out of range
        sys.stderr.write(f"agents serve: {exc}\n")
        return 2
    try:
        app = build_app(settings=settings, container_options=container_options,
                        prefix=getattr(args, "prefix", ""), public_url=getattr(args, "public_url", None))
    except ValueError as exc:  # an OAuth2 that can't work: PyJWT missing, a bad key file or scope
        sys.stderr.write(f"agents serve: {exc}\n")
        return 2
    if getattr(args, "grpc_port", None) is not None:
        from cleveragents.transports.grpc import main as grpc_main

        if (problem := grpc_main.missing_extra()) is not None:
            sys.stderr.write(f"agents serve: {problem}\n")
            return 2
        try:
            grpc_main.check_port(args.host, args.grpc_port)
        except OSError as exc:
            sys.stderr.write(f"agents serve: {exc}\n")
            return 2
        grpc_main.serve_with(app, args.host, args.grpc_port,
                             max_message_size=getattr(args, "max_message_size", DEFAULT_MAX_MESSAGE_SIZE),
                             max_concurrent_rpcs=limits.max_connections,
                             public_target=getattr(args, "grpc_public_url", None),
                             public_url=getattr(args, "public_url", None))
    try:
        asyncio.run(serve_app(app, args.host, args.port, log_level=log_level,
                              proxy_headers=getattr(args, "proxy_headers", False),
                              forwarded_allow_ips=getattr(args, "forwarded_allow_ips", "127.0.0.1"),
                              limits=limits, token=token))
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:  # uvicorn exits this way when startup fails
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from cleveragents.transports.serving import add_server_arguments

    if (problem := missing_extra()) is not None:
        sys.stderr.write(f"cleveragents-http: {problem}\n")
        return 2

    parser = argparse.ArgumentParser(prog="cleveragents-http", description="The CleverAgents A2A backend over HTTP.")
    add_server_arguments(parser)
    add_http_arguments(parser)
    return run_http(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
