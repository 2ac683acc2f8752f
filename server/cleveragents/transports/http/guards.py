"""What every HTTP request passes before any route runs: its ``Host``, its ``Origin``,
and, when no credential is configured, where it came in.

- **Host.** A request must name this server: a loopback name (``localhost``,
  ``127.0.0.1``, ``[::1]``) with the port it came to, the literal address it came to,
  the public URL's host, or an allowed host. Anything else gets 421 (Misdirected
  Request): a web page that rebinds its own name to 127.0.0.1 still sends that name.
- **Origin.** A browser request from another origin gets 403 unless the origin is
  allowed, preflight (``OPTIONS``) included; an allowed origin gets the CORS answer.
  A request without ``Origin`` that a browser marks cross-site or same-site
  (``Sec-Fetch-Site``), such as an ``<img>`` or a form, gets 403 too.
- **No credential.** Without a token or key, only connections that arrive on a
  loopback address are served (403 otherwise): a server open to everyone on loopback
  is never open to the network.

These run on every request, so the checks are set lookups on the raw headers; the
answer for each local address is worked out once.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443}
ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS"
PREFLIGHT_MAX_AGE = "600"
# A2A-Extensions: which extensions the server activated, for a page to read.
EXPOSED_HEADERS = "WWW-Authenticate, ETag, Last-Modified, Content-Type, A2A-Extensions, X-A2A-Extensions"
# What a browser may send along: credentials, the A2A headers and SSE's resume point.
BASE_ALLOWED_HEADERS = ("authorization", "content-type", "a2a-version", "a2a-extensions", "x-a2a-extensions",
                        "last-event-id")
_CACHED_ADDRESSES = 64  # local addresses a server answers on: few, but the cache is bounded anyway


@dataclass(frozen=True, slots=True)
class _Local:
    """What the guard knows of one local address (ip, port) that requests come to."""

    hosts: frozenset[bytes]
    loopback: bool


class GuardPolicy:
    """Which hosts and origins are served, and whether the network may call without a
    credential. ``allowed_hosts`` entries are ``name`` (any port), ``name:port``, or
    ``*`` (no Host check: only behind something that checks it)."""

    def __init__(self, *, public_url: str | None = None, allowed_hosts: Iterable[str] = (),
                 cors_origins: Iterable[str] = (), authenticated: bool = True, api_key_header: str = "X-API-Key"):
        self.authenticated = authenticated
        exact: set[bytes] = set()
        names: set[bytes] = set()
        self.any_host = False
        for entry in (h.strip().lower() for h in allowed_hosts if h and h.strip()):
            if entry == "*":
                self.any_host = True
            elif _split_host(entry.encode())[1] is None:
                names.add(entry.encode())
            else:
                exact.add(entry.encode())
        if public_url:
            parts = urlsplit(public_url)
            if parts.hostname:
                name = _bracketed(parts.hostname.lower())
                port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
                exact |= {name.encode(), f"{name}:{port}".encode()}
        self._exact = frozenset(exact)
        self._names = frozenset(names)
        self.origins = frozenset(o.strip().rstrip("/").encode() for o in cors_origins if o and o.strip())
        headers = (*BASE_ALLOWED_HEADERS, api_key_header.lower())
        self.allowed_headers = ", ".join(dict.fromkeys(headers))
        self._locals: dict[Any, _Local] = {}

    # -- the checks ----------------------------------------------------------------
    def local(self, server: Any) -> _Local:
        """The hosts a request that came to ``server`` (scope's (ip, port)) may name."""
        if server is not None and not isinstance(server, tuple):
            server = tuple(server)  # some servers give a list
        found = self._locals.get(server)
        if found is None:
            found = self._local_of(server)
            if len(self._locals) < _CACHED_ADDRESSES:
                self._locals[server] = found
        return found

    def _local_of(self, server: Any) -> _Local:
        host, port = (server[0], server[1]) if server else (None, None)
        try:
            address = ipaddress.ip_address(str(host).split("%", 1)[0]) if host is not None else None
        except ValueError:
            address = None
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # a dual-stack socket's view of an IPv4 peer
        names = [*LOOPBACK_NAMES]
        if address is not None:
            names.append(_bracketed(str(address)))
        hosts = {f"{name}:{port}".encode() for name in names} if port else set()
        if port in (80, None):
            hosts |= {name.encode() for name in names}
        return _Local(frozenset(hosts | self._exact), address is not None and address.is_loopback)

    def host_allowed(self, local: _Local, host: bytes | None) -> bool:
        if self.any_host:
            return True
        if host is None:
            return False
        host = host.lower()
        return host in local.hosts or (bool(self._names) and _split_host(host)[0] in self._names)


    def check(self, scope: Any) -> tuple[tuple[int, str, str] | None, bytes | None]:
        """(the refusal as (status, reason, message), or None; the request's Origin)."""
        host = origin = fetch_site = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"sec-fetch-site":
                fetch_site = value
        local = self.local(scope.get("server"))
        if not self.host_allowed(local, host):
            shown = (host or b"").decode("latin-1")[:200]
            return (421, "MISDIRECTED_REQUEST", f"This server does not answer for the host {shown!r}: allow it with "
                                                "--allowed-host (CLEVERAGENTS_ALLOWED_HOSTS) or set --public-url"), origin
        if origin is not None and origin not in self.origins:
            shown = origin.decode("latin-1")[:200]
            return (403, "PERMISSION_DENIED", f"Cross-origin requests from {shown!r} are refused: allow the origin "
                                              "with --cors-origin (CLEVERAGENTS_CORS_ORIGINS)"), origin
        if origin is None and fetch_site in (b"cross-site", b"same-site"):
            return (403, "PERMISSION_DENIED", "Cross-site browser requests are refused"), origin
        if not self.authenticated and not local.loopback:
            return (403, "PERMISSION_DENIED", "No credential is configured, so only loopback connections are served: "
                                              "configure a token (--auth-token, CLEVERAGENTS_AUTH_TOKENS)"), origin
        return None, origin

    def options_headers(self, origin: bytes | None) -> list[tuple[bytes, bytes]]:
        """The answer to OPTIONS: a CORS preflight from an allowed origin (others were
        refused already), or a plain OPTIONS. Neither runs a route."""
        headers = [(b"allow", ALLOWED_METHODS.encode())]
        if origin is not None:
            headers += [*cors_headers(origin),
                        (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
                        (b"access-control-allow-headers", self.allowed_headers.encode()),
                        (b"access-control-max-age", PREFLIGHT_MAX_AGE.encode())]
        return headers


class HttpGuard:
    """ASGI middleware applying a ``GuardPolicy`` to every HTTP request."""

    def __init__(self, app: ASGIApp, policy: GuardPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal, origin = self.policy.check(scope)
        if refusal is not None:
            await _refuse(scope, send, *refusal)
            return
        if scope["method"] == "OPTIONS":
            headers = [*self.policy.options_headers(origin), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 204, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if origin is None:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *cors_headers(origin)]}
            await send(message)

        await self.app(scope, receive, send_with_cors)


def guarded(endpoint: Callable[[Any], Awaitable[Any]], policy: GuardPolicy) -> Callable[[Any], Awaitable[Any]]:
    """``endpoint`` (a Starlette request handler) behind the same checks, for routes
    served without the app's middleware (a FastAPI router, whose routes FastAPI copies
    one by one). Its route must accept OPTIONS, which this answers."""
    from starlette.responses import Response

    @functools.wraps(endpoint)
    async def handle(request: Any) -> Any:
        refusal, origin = policy.check(request.scope)
        if refusal is not None:
            from cleveragents.transports.http.media import answer_type_of_scope

            status, reason, message = refusal
            return Response(refusal_body(status, reason, message), status,
                            media_type=answer_type_of_scope(request.scope).decode())
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={k.decode(): v.decode() for k, v in policy.options_headers(origin)})
        response = await endpoint(request)
        if origin is not None:
            for name, value in cors_headers(origin):
                response.headers[name.decode()] = value.decode("latin-1")
        return response

    return handle


def cors_headers(origin: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"access-control-allow-origin", origin), (b"vary", b"Origin"),
            (b"access-control-expose-headers", EXPOSED_HEADERS.encode())]


def refusal_body(status: int, reason: str, message: str) -> bytes:
    """A refusal in the HTTP+JSON binding's shape (a ``google.rpc.Status``)."""
    return json.dumps({"error": {"code": status, "status": reason, "message": message}}).encode()


async def _refuse(scope: Scope, send: Send, status: int, reason: str, message: str) -> None:
    """No CORS headers: a page can't read why it was refused."""
    from cleveragents.transports.http.media import answer_type_of_scope

    body = refusal_body(status, reason, message)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", answer_type_of_scope(scope)), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _split_host(host: bytes) -> tuple[bytes, bytes | None]:
    """``name[:port]`` or ``[v6][:port]`` -> (name, port or None)."""
    if host.startswith(b"["):
        end = host.find(b"]")
        name, rest = host[: end + 1], host[end + 1:]
        return name, rest[1:] if rest.startswith(b":") else None
    name, colon, port = host.rpartition(b":")
    return (name, port) if colon and port.isdigit() else (host, None)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def is_loopback_host(host: str) -> bool:
    """Whether a listening address (``--host``) is loopback only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False
