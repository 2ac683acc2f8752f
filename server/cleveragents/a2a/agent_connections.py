"""Connections to remote agents, kept between turns.

An ``a2a`` actor makes an ``A2AClient`` per turn, and each made an httpx client of its
own: every turn opened a new connection, with a TLS handshake on a real network.
``AgentConnections`` keeps one httpx client per agent URL, guarded by that agent's
reach rule (``client_reach.py``), whose idle connections stay open for
``KEEPALIVE_SECONDS``; a turn's client borrows it and leaves it open. httpx binds a
client to the event loop that made it, so a call from another loop starts afresh. At
most ``MAX_AGENTS`` are kept: past that, the one used longest ago is closed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

KEEPALIVE_SECONDS = 60.0  # between a user's turns, where httpx's default (5 s) would close them
MAX_AGENTS = 64


class AgentConnections:
    def __init__(self, size: int = MAX_AGENTS):
        self._size = size
        self._clients: OrderedDict[tuple[str, float], httpx.AsyncClient] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Future[Any]] = set()

    def client(self, url: str, timeout: float) -> httpx.AsyncClient:
        """The kept client of the agent at ``url`` (made on first use), whose calls
        take at most ``timeout`` seconds by default."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # another loop's clients can't serve this one
            self._clients, self._loop = OrderedDict(), loop
        key = (url, timeout)
        if (client := self._clients.get(key)) is None:
            import httpx

            from cleveragents.a2a.client_reach import PinnedTransport, Reach

            transport = PinnedTransport(Reach(url, timeout), limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))
            client = self._clients[key] = httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False,
                                                            transport=transport)
            while len(self._clients) > self._size:
                _, oldest = self._clients.popitem(last=False)
                closing = asyncio.ensure_future(oldest.aclose())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        self._clients.move_to_end(key)
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), OrderedDict()
        if self._loop is asyncio.get_running_loop():
            for client in clients:
                await client.aclose()
