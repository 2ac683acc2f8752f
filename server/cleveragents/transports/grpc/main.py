"""``agents serve --http --grpc-port N``: the gRPC binding next to the HTTP app.

The gRPC server runs in the HTTP server's event loop, over the same services and
auth (``app.state.a2a``): it starts once the services have, and stops before they
close, inside the app's lifespan. Once bound, one line ``gRPC listening on HOST:PORT``
goes to stderr (before the HTTP ``listening on`` line), and the cards name it (for
1.0 and 0.3: the port serves both). Nothing here imports grpc until the server starts.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

WILDCARDS = ("0.0.0.0", "::", "[::]", "")


def add_grpc_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("gRPC")
    group.add_argument("--grpc-port", type=int, default=None, metavar="PORT",
                       help="also serve the A2A gRPC binding on this port of --host (0 picks a free one; "
                            "needs the grpc extra; default: off)")
    group.add_argument("--grpc-public-url", metavar="HOST:PORT",
                       help="the gRPC target the agent card names, behind a proxy (default: the address it "
                            "listens on)")


def missing_extra() -> str | None:
    from cleveragents.a2a import grpc_wire

    problem = grpc_wire.missing_extra()
    return None if problem is None else f"gRPC serving is not available: {problem}"


def check_port(host: str, port: int) -> None:
    """``OSError`` (one line) when ``host:port`` can't be listened on, so that a port in
    use is refused before anything starts. Port 0 always can."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpc binds: a port in TIME_WAIT is free
        try:
            probe.bind((host.strip("[]") or "0.0.0.0", port))
        except OSError as exc:
            raise OSError(f"cannot listen for gRPC on {card_target(host, port)}: {exc.strerror or exc}") from None


def card_target(host: str, port: int, public_url: str | None = None) -> str:
    """The ``HOST:PORT`` a client dials: the listening address, or for a wildcard one
    the host of the HTTP public URL (else localhost)."""
    if host in WILDCARDS:
        host = (urlsplit(public_url).hostname if public_url else None) or "localhost"
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{shown}:{port}"


def serve_with(app: Any, host: str, port: int, *, max_message_size: int, max_concurrent_rpcs: int | None = None,
               public_target: str | None = None, public_url: str | None = None) -> None:
    """Make ``app``'s lifespan start the gRPC server on ``host:port`` after the services
    and stop it before them. The card names ``public_target``, else the address bound
    (``card_target``, with the HTTP ``public_url``'s host for a wildcard address)."""
    inner = app.router.lifespan_context
    shared = app.state.a2a

    @contextlib.asynccontextmanager
    async def lifespan(parent: Any) -> AsyncIterator[Any]:
        from cleveragents.transports.grpc.service import start_server, stop_server

        async with inner(parent) as state:
            try:
                server, bound = await start_server(shared, host, port, max_message_size=max_message_size,
                                                   max_concurrent_rpcs=max_concurrent_rpcs)
            except OSError as exc:
                sys.stderr.write(f"agents serve: {exc}\n")
                raise
            facade = await shared.runtime.facade()
            if facade.cards is not None:
                facade.cards.bind(grpc_url=public_target or card_target(host, bound, public_url))
            sys.stderr.write(f"gRPC listening on {card_target(host, bound)}\n")
            sys.stderr.flush()
            try:
                yield state
            finally:
                await stop_server(server)

    app.router.lifespan_context = lifespan
