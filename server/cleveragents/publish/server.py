"""``A2A``: serve an ``Agent`` or an ``AgentTeam`` as an A2A endpoint.

It holds what the agent card says (name, description, url, version, provider,
documentation, media types, skills, capabilities, extensions, auth), how the
endpoint delivers text replies (``reply_as``, over the agent's own choice), and hands the
actor and itself (as the card's source) to a transport: stdio (``serve_stdio``) or
HTTP (``serve``; ``asgi_app`` to mount in any ASGI app, ``get_router`` to include in
a FastAPI app).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cleveragents.a2a import extensions as a2a_extensions
from cleveragents.a2a.access import ScopeGrants
from cleveragents.a2a.capabilities import backend_extension
from cleveragents.a2a.card_keys import references
from cleveragents.a2a.card_oauth2 import OAuth2Scheme
from cleveragents.a2a.cards import AgentCardSpec, AgentProvider, SkillSpec, card_v03, card_v1
from cleveragents.a2a.extensions import AgentExtension
from cleveragents.config import OAuth2, Settings
from cleveragents.domain.actor import Actor
from cleveragents.domain.replies import ReplyAs

if TYPE_CHECKING:
    from cleveragents.a2a.card_signing import CardSigner

DEFAULT_URL = "http://localhost:8000/a2a"
DEFAULT_MODES = ("text/plain", "application/json")


class A2A:
    def __init__(self, agent: Actor | None = None, agents: Actor | None = None, name: str | None = None,
                 description: str | None = None, url: str | None = None, version: str = "1.0.0",
                 prefix: str = "", auth_token: str | None = None,
                 extended_agent_card_callback: Callable[..., Any] | None = None,
                 extensions: Iterable[AgentExtension] = (), oauth2: OAuth2 | Mapping[str, Any] | None = None, *,
                 provider: AgentProvider | None = None,
                 documentation_url: str | None = None, default_input_modes: Iterable[str] = DEFAULT_MODES,
                 default_output_modes: Iterable[str] = DEFAULT_MODES, streaming: bool = True,
                 push_notifications: bool = True, signing_keys: str | Iterable[str] | None = None,
                 signing_jku: str | None = None, reply_as: ReplyAs | str | None = None):
        actor = agent if agent is not None else agents  # given both, the single agent wins
        if actor is None:
            raise TypeError("A2A needs agent=... (an Agent) or agents=... (an AgentTeam)")
        self._actor = actor
        # How this endpoint delivers text replies; None: as the agent (or team) says.
        self.reply_as: ReplyAs | None = None if reply_as is None else ReplyAs.parse(reply_as)
        self.name = name or actor.name
        self.description = description if description is not None else getattr(actor, "description", "")
        # Without a url, the card names wherever the server is reached.
        self.url_given = url is not None
        self.url = url or DEFAULT_URL
        self.version = version
        self.prefix = prefix
        self.auth_token = auth_token
        if extended_agent_card_callback is not None and not callable(extended_agent_card_callback):
            raise TypeError("extended_agent_card_callback must be callable: it gets the card (a dict) and may "
                            "change it or return a new one")
        # OAuth2 access tokens (HTTP mode); a dict is OAuth2's fields. ValueError names a bad one.
        self.oauth2 = OAuth2(**oauth2) if isinstance(oauth2, Mapping) else oauth2
        self._oauth2_grants = ScopeGrants(self.oauth2.scopes) if self.oauth2 is not None else None
        self.extended_agent_card_callback = extended_agent_card_callback
        if provider is not None and not isinstance(provider, AgentProvider):
            raise TypeError(f"provider must be a cleveragents.AgentProvider, not {type(provider).__name__}")
        self.provider = provider
        self.documentation_url = _web_url("documentation_url", documentation_url)
        self.default_input_modes = _media_types("default_input_modes", default_input_modes)
        self.default_output_modes = _media_types("default_output_modes", default_output_modes)
        for name, value in (("streaming", streaming), ("push_notifications", push_notifications)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, not {value!r}")
        self.streaming = streaming
        self.push_notifications = push_notifications
        # Ours first, then the agent's, then these; a uri declared twice differently is a TypeError.
        self.extensions: tuple[AgentExtension, ...] = a2a_extensions.merge(
            (backend_extension(),), getattr(actor, "extensions", ()), extensions)
        # The keys (PEM or JWK files, `path` or `path#kid`) that sign the 1.0 cards; read now,
        # so a missing or wrong key fails here rather than on the first request.
        self._signer: CardSigner | None = None
        if refs := references(signing_keys):
            from cleveragents.a2a.card_signing import CardSigner

            self._signer = CardSigner.from_files(refs, signing_jku)

    def __repr__(self) -> str:
        return f"A2A({self.name!r})"

    @property
    def actor(self) -> Actor:
        return self._actor

    def skills(self) -> tuple[SkillSpec, ...]:
        return tuple(getattr(self._actor, "skills", tuple)())

    def card_spec(self) -> AgentCardSpec:
        """What the agent card says: a skill per tool, the capabilities (streaming and
        push notifications: the server refuses what the card turns off), the extensions,
        the extended card when something is behind authentication or a callback adds to it."""
        return AgentCardSpec(
            name=self.name, description=self.description, version=self.version, url=self.url,
            provider=self.provider, documentation_url=self.documentation_url,
            default_input_modes=self.default_input_modes, default_output_modes=self.default_output_modes,
            skills=self.skills(), streaming=self.streaming, push_notifications=self.push_notifications,
            extended_card=self.extended_agent_card_callback is not None or self.auth_token is not None
            or self.oauth2 is not None,
            bearer=self.auth_token is not None, extensions=self.extensions, oauth2=self._oauth2_scheme(),
        )

    def _oauth2_scheme(self) -> OAuth2Scheme | None:
        if self.oauth2 is None or self._oauth2_grants is None:
            return None
        return OAuth2Scheme.of(self.oauth2, self._oauth2_grants)

    def card_signer(self) -> CardSigner | None:
        """What signs this agent's cards (``signing_keys``), or None."""
        return self._signer

    def agent_card(self, version: str = "1.0") -> dict[str, Any]:
        """The public agent card in the A2A ``version`` (1.0 or 0.3) wire form, signed
        when ``signing_keys`` were given."""
        render = {"1.0": card_v1, "0.3": card_v03}.get(version)
        if render is None:
            raise ValueError(f"agent cards come in A2A 1.0 or 0.3, not {version!r}")
        card = render(self.card_spec())
        if self._signer is None:
            return card
        return self._signer.sign(card) if version == "1.0" else self._signer.sign_v03(card)

    def serve_stdio(self, *, log_level: str = "WARNING", max_message_size: int | None = None,
                    **settings: Any) -> int:
        """Serve on this process's stdio (LSP framing) until the client exits; returns
        the exit code. ``settings`` are ``cleveragents.config.Settings`` fields
        (``workspace`` defaults to the current directory, ``memory=True`` writes nothing);
        ``max_message_size``: the largest message read, in bytes (default 16 MiB)."""
        from cleveragents.transports.lsp.main import (
            serve_stdio,  # the transport loads only to serve
        )
        from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE

        return serve_stdio(Settings.from_env(**settings), actor=self._actor, card=self, log_level=log_level,
                           max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE)

    def asgi_app(self, **settings: Any) -> Any:
        """The ASGI app (Starlette) serving this agent: JSON-RPC at ``{prefix}/a2a``,
        the HTTP+JSON binding, and the agent cards. Mount it in any ASGI app. The
        services start on the first request (or at startup when run by a server that
        sends lifespan events) and stop at shutdown."""
        from cleveragents.container.configured import configured_oauth2
        from cleveragents.transports.http.app import build_app
        from cleveragents.transports.http.auth import HttpAuth

        resolved = Settings.from_env(**self._with_oauth2(settings))
        auth = HttpAuth.of((self.auth_token, *resolved.auth_tokens), resolved.api_keys, resolved.api_key_header,
                           configured_oauth2(resolved))
        return build_app(settings=resolved, container_options={"actor": self._actor, "card": self},
                         prefix=self.prefix, auth=auth, public_url=self.url if self.url_given else None)

    def _with_oauth2(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` with this agent's OAuth2, unless they give their own."""
        return settings if self.oauth2 is None or settings.get("oauth2") is not None \
            else {**settings, "oauth2": self.oauth2}

    def get_router(self, **settings: Any) -> Any:
        """A FastAPI ``APIRouter`` for ``app.include_router(a2a.get_router())``: the
        routes of ``asgi_app(**settings)``, with its lifespan, so the services start and
        stop with the FastAPI app. FastAPI is optional, hence imported here. Set a path
        with ``A2A(prefix=...)``: without ``url``, the card never sees ``include_router``'s."""
        try:
            from fastapi import APIRouter
        except ImportError as exc:
            raise ImportError("A2A.get_router() needs FastAPI: pip install fastapi") from exc
        from starlette.routing import BaseRoute, Route

        from cleveragents.transports.http.app import slash_forms
        from cleveragents.transports.http.guards import guarded

        app = self.asgi_app(**settings)
        # A router has no middleware (FastAPI copies its routes one by one): each endpoint
        # gets the app's guard, which also answers OPTIONS (CORS preflights) for its path.
        # FastAPI copies a route by its path: each slash form is a route of its own.
        routes: list[BaseRoute] = [
            Route(path, guarded(_handling_errors(route.endpoint, app.exception_handlers), app.state.guard),
                  methods=[*route.methods, "OPTIONS"], name=route.name)
            for route in app.routes for path in slash_forms(route.path)]
        return APIRouter(routes=routes, lifespan=app.router.lifespan_context)

    def serve(self, port: int = 8000, host: str = "127.0.0.1", *, log_level: str = "WARNING", no_auth: bool = False,
              limits: Any = None, grpc_port: int | None = None, **settings: Any) -> int:
        """Serve over HTTP (uvicorn) until interrupted; returns the exit code. Listens on
        loopback unless ``host`` says otherwise. Without ``auth_token`` and without
        configured tokens or API keys, a token is made for the run and printed once on
        stderr; ``no_auth=True`` serves without one, on a loopback ``host`` only (else
        ``ValueError``). ``limits``: a ``cleveragents.transports.http.connections.HttpLimits``
        (timeouts and the connection limit). ``grpc_port``: serve the A2A gRPC binding
        on that port of ``host`` too (0: a free one; the ``grpc`` extra, else
        ``RuntimeError``; a port in use is ``OSError``)."""
        import asyncio

        from cleveragents.transports.http.connections import HttpLimits
        from cleveragents.transports.http.credentials import credentials_for_serving
        from cleveragents.transports.http.main import serve_app
        from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE, configure_logging

        resolved, token = credentials_for_serving(Settings.from_env(**self._with_oauth2(settings)), host,
                                                  no_auth=no_auth, extra_tokens=(self.auth_token,))
        if token is not None:
            settings = {**settings, "auth_tokens": resolved.auth_tokens}
        app = self.asgi_app(**settings)
        if grpc_port is not None:
            from cleveragents.transports.grpc import main as grpc_main

            if (problem := grpc_main.missing_extra()) is not None:
                raise RuntimeError(problem)
            grpc_main.check_port(host, grpc_port)
            grpc_main.serve_with(app, host, grpc_port, max_message_size=DEFAULT_MAX_MESSAGE_SIZE,
                                 max_concurrent_rpcs=(limits or HttpLimits()).max_connections,
                                 public_url=self.url if self.url_given else None)
        configure_logging(log_level)
        try:
            asyncio.run(serve_app(app, host, port, log_level=log_level, limits=limits, token=token))
        except KeyboardInterrupt:
            return 130
        return 0


def _media_types(name: str, values: Iterable[str]) -> tuple[str, ...]:
    """Media types as the card lists them (``type/subtype``), at least one."""
    if isinstance(values, str):
        raise TypeError(f"{name} is a list of media types, not one string: {name}=[{values!r}]")
    modes = tuple(values)
    bad = [m for m in modes if not isinstance(m, str) or m.count("/") != 1 or not all(m.split("/"))
           or any(c.isspace() for c in m)]
    if bad or not modes:
        raise TypeError(f"{name} must list media types such as 'text/plain', not {list(modes)!r}")
    return tuple(dict.fromkeys(modes))


def _web_url(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("https://", "http://")) or any(c.isspace() for c in value):
        raise TypeError(f"{name} must be an http(s) URL, not {value!r}")
    return value


def _handling_errors(endpoint: Callable[..., Any], handlers: Mapping[Any, Callable[..., Any]]) -> Callable[..., Any]:
    """A router has no exception handlers of its own: apply the Starlette app's (services
    that did not start answer 503) around each endpoint, as the app would."""
    @functools.wraps(endpoint)
    async def handled(request: Any) -> Any:
        try:
            return await endpoint(request)
        except Exception as exc:
            handler = next((handlers[kind] for kind in type(exc).__mro__ if kind in handlers), None)
            if handler is None:
                raise
            return await handler(request, exc)

    return handled
