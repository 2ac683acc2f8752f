"""One HTTP client for the model calls of a container's actors.

A hosted model is a TCP and TLS handshake away, and an actor that made a client per
turn paid both before every turn. This client outlives turns: its connections stay
open for ``KEEPALIVE_SECONDS`` between them. Headers and time limits go with each
request, so actors of different endpoints and keys share it. httpx binds a client to
the event loop that first used it; a call from another loop gets a client of its own.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from cleveragents import tls

if TYPE_CHECKING:
    import httpx

KEEPALIVE_SECONDS = 60.0  # between a user's turns, where httpx's default (5 s) would close it


class ModelHttp:
    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __call__(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            import httpx

            self._client = httpx.AsyncClient(verify=tls.client_context(), follow_redirects=False,
                                             limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()
