"""The HTTP face of the backend: a Starlette app over the same facade as stdio.

Routes (``prefix`` is "" unless configured), each also with a trailing slash:

- ``POST {prefix}/a2a``: JSON-RPC, both dialects (``jsonrpc.py``).
- ``GET {prefix}/events``: ``_cleveragents/event/subscribe`` for EventSource clients
  (query ``plan_id``, ``since``, ``event_types``; ``Last-Event-ID`` resumes).
- The A2A 1.0 HTTP+JSON binding under ``{prefix}`` (``rest.py``).
- ``/.well-known/agent-card.json`` and ``/.well-known/agent.json`` (``cards.py``), at
  the root and under the prefix.

``build_app(container=...)`` serves an existing Container (the caller starts and closes it);
without one the app builds its own from ``settings`` at startup and closes it at
shutdown (``transports/runtime.py``). An app mounted inside another may never see a
lifespan event, so the first request starts the services too. Every request passes
``guards.HttpGuard`` first (Host, Origin, and loopback only when no credential is
configured).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cleveragents import tracing
from cleveragents.a2a import dialects, envelope, extensions
from cleveragents.a2a.errors import internal_error_payload
from cleveragents.a2a.facade import CallContext
from cleveragents.a2a.version import EMPTY_HEADER_VERSION
from cleveragents.config import Settings
from cleveragents.transports import redaction
from cleveragents.transports.http.auth import Caller, HttpAuth
from cleveragents.transports.http.body_reads import BodyReads
from cleveragents.transports.http.cards import CARD_V03_PATH, CARD_V1_PATH, JWKS_PATH, CardRoutes
from cleveragents.transports.http.guards import GuardPolicy, HttpGuard
from cleveragents.transports.http.jsonrpc import MAX_BODY_BYTES, JsonRpcEndpoint
from cleveragents.transports.http.media import json_answer
from cleveragents.transports.http.rest import RestBinding, status_body
from cleveragents.transports.http.sse import EventStreamResponse
from cleveragents.transports.runtime import ServiceRuntime

logger = logging.getLogger("cleveragents.http")

JSONRPC_PATH = "/a2a"
EVENTS_PATH = "/events"
VERSION_HEADER = "a2a-version"
EXTENSION_HEADERS = (extensions.HEADER, extensions.LEGACY_HEADER)
TRACE_HEADERS = ("traceparent", "tracestate")  # W3C Trace Context
T = TypeVar("T")


class ServicesUnavailable(Exception):
    """The services did not start: a bad configuration file, a state directory that
    can't be opened. Only an app served without a lifespan gets this far."""


async def _unavailable(request: Request, exc: Exception) -> Response:
    # Unlike stdio, the caller may not be the server's owner: the cause (a config file's
    # path and line) stays in the log, under the error id the caller is given.
    if request.url.path.rstrip("/").endswith(JSONRPC_PATH):
        payload = internal_error_payload(exc, dialects.EXTENSION, "starting the services (http transport)")
        return json_answer(request, envelope.error_response(None, payload), 503)
    status, body = status_body(internal_error_payload(exc, dialects.A2A_V1, "starting the services (http+json)"))
    return json_answer(request, body, status)


class A2AHttpApp:
    """What every route shares: the services, the auth and where the agent lives."""

    def __init__(self, runtime: ServiceRuntime, *, auth: HttpAuth | None = None, prefix: str = "",
                 public_url: str | None = None):
        self.runtime = runtime
        self.auth = auth or HttpAuth()
        self.body_reads = BodyReads()
        self.prefix = _normal_prefix(prefix)
        self.public_url = public_url
        self.card_modified = time.time()
        self._bound = False

    async def facade(self, request: Request) -> Any:
        try:
            facade = await self.runtime.facade()
        except Exception as exc:
            raise ServicesUnavailable() from exc
        if not self._bound:
            self._bind_card(facade, request)
        return facade

    def _bind_card(self, facade: Any, request: Request) -> None:
        """The card names the JSON-RPC endpoint: the configured public URL, else the
        address this first request came to (the socket's, never a header's)."""
        self._bound = True
        cards = facade.cards
        if cards is None:
            return
        # root_path: where a parent app mounted this one (set by the app, not the client).
        root = bound_url(request.scope) + request.scope.get("root_path", "").rstrip("/")
        url = self.public_url or root + self.prefix + JSONRPC_PATH
        # The keys are served beside the JSON-RPC endpoint (under the prefix), and at the root.
        base = url.removesuffix(JSONRPC_PATH) if url.endswith(JSONRPC_PATH) else root
        cards.bind(url, bearer=bool(self.auth.tokens),
                   api_key_header=self.auth.api_key_header if self.auth.api_keys else None,
                   oauth2=self.auth.oauth2.scheme if self.auth.oauth2 is not None else None,
                   jwks_url=base + JWKS_PATH)
        self.card_modified = time.time()

    def call_context(self, request: Request, method: str, msg_id: Any, caller: Caller | None = None) -> CallContext:
        # An empty A2A-Version header means 0.3 (the A2A specification).
        version = request.headers.get(VERSION_HEADER, "").strip() or EMPTY_HEADER_VERSION
        context = CallContext(method=method, dialect="", request_id=msg_id, a2a_version=version, transport="http",
                              extensions=requested_extensions(request.headers),
                              caller=caller.identity if caller is not None else None)
        if tracing.on():  # the caller's trace, which the request's span joins
            context.trace_headers = {k: v for k in TRACE_HEADERS if (v := request.headers.get(k)) is not None}
        return context

    @staticmethod
    def echo(request: Request, context: CallContext) -> dict[str, str] | None:
        """The activated extensions the agent supports, under the header name(s) the
        request used; ``None`` when there are none."""
        if not context.activated_extensions:
            return None
        value = ", ".join(context.activated_extensions)
        return {name: value for name in EXTENSION_HEADERS if name in request.headers}

    async def until_disconnect(self, request: Request, work: Awaitable[T]) -> T | None:
        """Run ``work``; cancel it (and answer ``None``) if the client goes away first."""
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        return None if task.cancelled() else task.result()


def requested_extensions(headers: Any) -> tuple[str, ...]:
    """The uris of every ``A2A-Extensions`` and ``X-A2A-Extensions`` header, each once."""
    return extensions.requested([value for name in EXTENSION_HEADERS for value in headers.getlist(name)])


async def _disconnected(request: Request) -> None:
    receive = request.receive
    while (await receive())["type"] != "http.disconnect":
        pass


def bound_url(scope: Any) -> str:
    """``http://ADDRESS:PORT`` of the local socket a request came in on."""
    server = scope.get("server")
    if not server:
        return "http://localhost"
    host, port = server[0], server[1]
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}" if port in (None, 80) else f"http://{host}:{port}"


class AnySlashRoute(Route):
    """A route that answers its path with a trailing slash too. Clients join "/" onto
    a card's URL, and a redirect would not do: many clients drop a redirected POST's
    body. One pattern for both forms, so matching costs nothing more."""

    def __init__(self, path: str, endpoint: Any, **options: Any):
        super().__init__(path, endpoint, **options)
        if not path.endswith("/"):
            self.path_regex = re.compile(self.path_regex.pattern.removesuffix("$") + "/?$")


def slash_forms(path: str) -> tuple[str, ...]:
    """A route's path and its trailing-slash form, for routers that copy routes by path
    (a FastAPI router), where an ``AnySlashRoute`` would become a plain route."""
    return (path,) if path.endswith("/") else (path, path + "/")


def _normal_prefix(prefix: str) -> str:
    prefix = (prefix or "").strip().rstrip("/")
    return "" if not prefix else prefix if prefix.startswith("/") else "/" + prefix


def build_app(container: Any = None, *, settings: Settings | None = None,
              container_options: dict[str, Any] | None = None, prefix: str = "",
              auth: HttpAuth | None = None, public_url: str | None = None) -> Starlette:
    """The ASGI app. ``auth`` defaults to the secrets and the OAuth2 of ``settings``
    (or of the configuration files); ``ValueError`` for an OAuth2 that can't work."""
    from cleveragents.container.configured import configured_oauth2

    # The same settings the services are built from (the environment's, when none are given).
    source = settings or getattr(container, "settings", None) or Settings.from_env()
    if auth is None:
        auth = HttpAuth.of(source.auth_tokens, source.api_keys, source.api_key_header, configured_oauth2(source))
    redaction.register((*auth.tokens, *auth.api_keys))
    # The extended card tells authenticated callers how large a request may be.
    options = {"max_message_size": MAX_BODY_BYTES, **(container_options or {})}
    runtime = ServiceRuntime(container, settings=settings, container_options=options)
    shared = A2AHttpApp(runtime, auth=auth, prefix=prefix, public_url=public_url)
    jsonrpc = JsonRpcEndpoint(shared)
    cards = CardRoutes(shared)
    p = shared.prefix

    async def events(request: Request) -> Response | EventStreamResponse:
        """EventSource: GET with query params; each event's ULID is its SSE id."""
        query = request.query_params
        params: dict[str, Any] = {k: query[k] for k in ("plan_id", "since") if query.get(k)}
        if types := query.get("event_types"):
            params["event_types"] = [t for t in types.split(",") if t]
        return await jsonrpc.subscribe_get(request, params)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route(p + JSONRPC_PATH, jsonrpc.handle, methods=["POST"]),
        Route(p + EVENTS_PATH, events, methods=["GET"]),
        Route(p + "/healthz", health, methods=["GET"]),
    ]
    for base in dict.fromkeys([p, ""]):
        routes += [Route(base + CARD_V1_PATH, cards.card_v1, methods=["GET"]),
                   Route(base + CARD_V03_PATH, cards.card_v03, methods=["GET"]),
                   Route(base + JWKS_PATH, cards.jwks, methods=["GET"])]
    routes += RestBinding(shared).routes(p)
    routes = [AnySlashRoute(r.path, r.endpoint, methods=r.methods, name=r.name) for r in routes]
    policy = GuardPolicy(public_url=public_url, allowed_hosts=source.allowed_hosts,
                         cors_origins=source.cors_origins, authenticated=auth.enabled,
                         api_key_header=auth.api_key_header)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await runtime.facade()  # start the services before the first request
        try:
            yield
        finally:
            await runtime.aclose()

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={ServicesUnavailable: _unavailable},
                    middleware=[Middleware(HttpGuard, policy=policy)])
    app.router.redirect_slashes = False  # every route has both forms; anything else is a 404
    app.state.a2a = shared
    app.state.guard = policy
    return app
