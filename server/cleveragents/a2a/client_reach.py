"""Where a remote agent may send the outbound client: no nearer to this machine than
the agent itself.

The user names an agent's URL (the origin); the agent names the rest: the interfaces
in its card, and any redirect while the card is read. Loopback is nearer than the
local network (private, link-local, shared and other non-global addresses), which is
nearer than the internet. Every address another host resolves to must be as far as
the nearest address of the origin, and none may be a cloud metadata address unless
the origin is one. The client then connects to an address it checked, so a second
DNS answer can't move it. Requests to the origin's own host are not checked: the
user chose it.

An HTTP proxy from the environment resolves names itself; requests through one are
the proxy's to confine.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any
from urllib.parse import urlsplit

import httpx

from cleveragents.a2a.client_errors import A2AClientConnectionError, A2AClientTargetRefusedError, A2AClientTimeoutError
from cleveragents.domain.addresses import METADATA, Address, literal_address, read_address
from cleveragents.http_clients import KEEPALIVE_SECONDS, tls_context

LOOPBACK, LOCAL, INTERNET = 0, 1, 2
_NEARNESS_NAMES = ("loopback", "local")


def nearness(address: Address) -> int:
    """LOOPBACK, LOCAL or INTERNET: how near ``address`` (as ``read_address`` reads
    it) is to this machine."""
    if address.is_loopback or address.is_unspecified:  # 0.0.0.0 reaches this machine too
        return LOOPBACK
    return INTERNET if address.is_global else LOCAL


class Reach:
    """The rule for one client, whose origin is ``origin_url``; ``timeout`` bounds
    each name lookup."""

    def __init__(self, origin_url: str, timeout: float):
        self.origin = (urlsplit(origin_url).hostname or "").lower()
        self.timeout = timeout
        self._floor: tuple[int, frozenset[Address]] | None = None

    async def addresses(self, host: str, url: str) -> tuple[str, ...] | None:
        """The checked addresses to connect to for ``url`` (at ``host``), or
        None for the origin's own host; refuses with ``A2AClientTargetRefusedError``."""
        host = host.lower().strip("[]")
        if host == self.origin:
            return None
        if self._floor is None:
            found = await self._resolve(self.origin, self.origin)
            own = frozenset(read_address(text) for text in found)
            self._floor = min(nearness(address) for address in own), own
        floor, own = self._floor
        found = await self._resolve(host, url)
        for text in found:
            address = read_address(text)
            if address in METADATA and address not in own:
                self._refuse(url, address, "metadata", "a cloud metadata address")
            if (near := nearness(address)) < floor:
                reason = _NEARNESS_NAMES[near]
                self._refuse(url, address, reason, f"a {reason} address, nearer to this machine than the agent")
        return found

    def _refuse(self, url: str, address: Address, reason: str, what: str) -> None:
        raise A2AClientTargetRefusedError(
            f"the agent at {self.origin} sent the client to {url}, which is {address}, {what}: not called",
            {"url": url, "address": str(address), "reason": reason, "agent": self.origin}, url=url)

    async def _resolve(self, host: str, url: str) -> tuple[str, ...]:
        if (literal := literal_address(host)) is not None:
            return (literal,)
        try:
            async with asyncio.timeout(self.timeout):
                infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except TimeoutError:
            raise A2AClientTimeoutError(f"{url}: {host} did not resolve within {self.timeout:g}s",
                                        {"url": url}, url=url) from None
        except (OSError, UnicodeError) as exc:
            raise A2AClientConnectionError(f"{url}: {host} does not resolve ({exc})", {"url": url}, url=url) from None
        found = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        if not found:
            raise A2AClientConnectionError(f"{url}: {host} resolves to no address", {"url": url}, url=url)
        return found


class PinnedTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, sending each request to an address ``reach`` checked:
    the URL names that address, the Host header and TLS (SNI and the certificate's
    name) keep the host."""

    def __init__(self, reach: Reach, **options: Any):
        self.reach = reach
        self._inner = httpx.AsyncHTTPTransport(verify=tls_context(), **options)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url, extensions = request.url, request.extensions
        addresses = await self.reach.addresses(url.host, str(url))
        if addresses is None:
            return await self._inner.handle_async_request(request)
        try:
            for address in addresses[:-1]:  # the last one's failure is the answer
                try:
                    return await self._send_to(request, url, extensions, address)
                except httpx.ConnectError:
                    continue
            return await self._send_to(request, url, extensions, addresses[-1])
        finally:  # redirects and messages read the URL the caller made
            request.url, request.extensions = url, extensions

    async def _send_to(self, request: httpx.Request, url: httpx.URL, extensions: Any, address: str) -> httpx.Response:
        request.url = url.copy_with(host=address)
        request.extensions = {**extensions, "sni_hostname": url.host}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_client(reach: Reach, timeout: float, **transport: Any) -> httpx.AsyncClient:
    """An httpx client whose every request goes where ``reach`` allows, to an address
    it checked; ``transport`` takes the transport's options (``limits``)."""
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=False,
                             transport=PinnedTransport(reach, **transport))


def agent_client(key: tuple[str, float]) -> httpx.AsyncClient:
    """The client kept for the agent at a URL with a timeout (``KeptClients``'s key)."""
    url, timeout = key
    return guarded_client(Reach(url, timeout), timeout, limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))
