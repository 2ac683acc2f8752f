"""What the outbound HTTP clients share: one TLS context, and clients kept between calls.

**The TLS context.** Making one loads the whole CA bundle: about 24 ms of CPU, which
httpx spends in every ``AsyncClient`` it makes without one, on the event loop.
``tls_context`` is httpx's own default context, made once: it trusts
``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set, else certifi's bundle, and a change to
either variable gets a context of its own.

**Kept clients.** A client made for one turn and closed after it costs the next turn
a TCP and a TLS handshake with the same host. ``KeptClients`` keeps clients between
calls, by a key (an agent's URL, say), at most ``size`` of them: past that, the one
used longest ago is closed. Their idle connections stay open ``KEEPALIVE_SECONDS``,
where httpx's default (5 s) would close them within a user's pause between turns.
httpx binds a client to the event loop that made it, so a call from another loop
starts afresh.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import httpx

KEEPALIVE_SECONDS = 60.0
K = TypeVar("K", bound=Hashable)


def tls_context() -> ssl.SSLContext:
    return _tls_context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


@functools.lru_cache(maxsize=4)
def _tls_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """The context for these values of the two variables (the arguments are the key:
    httpx reads the variables itself)."""
    import httpx

    return httpx.create_ssl_context()


class KeptClients(Generic[K]):
    """Clients made by ``make(key)``, kept by key."""

    def __init__(self, make: Callable[[K], httpx.AsyncClient], size: int = 64):
        self._make, self._size = make, size
        self._clients: OrderedDict[K, httpx.AsyncClient] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Future[Any]] = set()

    def get(self, key: K) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # another loop's clients can't serve this one
            self._clients, self._loop = OrderedDict(), loop
        if (client := self._clients.get(key)) is None:
            client = self._clients[key] = self._make(key)
            while len(self._clients) > self._size:
                _, oldest = self._clients.popitem(last=False)
                closing = asyncio.ensure_future(oldest.aclose())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        self._clients.move_to_end(key)
        return client

    async def aclose(self) -> None:
        """Close every kept client, and wait for those made room from to be closed."""
        clients, self._clients = list(self._clients.values()), OrderedDict()
        if self._loop is asyncio.get_running_loop():
            for client in clients:
                await client.aclose()
            await asyncio.gather(*self._closing, return_exceptions=True)
