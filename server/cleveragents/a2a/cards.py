"""Agent cards: one description of the agent, rendered as an A2A 1.0 card, a 0.3 card
(served at ``/.well-known/agent.json``), or the card both read (``card_both``, served
at ``/.well-known/agent-card.json``, where 1.0 clients and 0.3.x clients both look).

The 1.0 card is ProtoJSON (``AgentCard`` of ``specification/a2a.proto``); the 0.3
card follows ``specification/json/a2a.json`` of v0.3.0.

Each card lists each interface once: JSON-RPC at ``url`` (both versions) and HTTP+JSON
at ``base_url`` (1.0 under it, 0.3 under its ``/v1``); when gRPC is served, at
``grpc_url``, the 1.0 card lists it for 1.0 and the 0.3 fields (``additionalInterfaces``)
for 0.3: the port serves both versions' services.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cleveragents.a2a.card_oauth2 import OAUTH2_SCHEME, OAuth2Scheme
from cleveragents.a2a.extensions import AgentExtension

PROTOCOL_V1 = "1.0"
PROTOCOL_V03 = "0.3"
CARD_PROTOCOL_VERSION_V03 = "0.3.0"
JSONRPC = "JSONRPC"
HTTP_JSON = "HTTP+JSON"
GRPC = "GRPC"
# The card's names of the security schemes (keys of ``securitySchemes``).
BEARER_SCHEME = "bearerAuth"
HTTP_BEARER = "Bearer"  # the HTTP auth scheme's name (RFC 7235), one spelling in both versions
API_KEY_SCHEME = "apiKey"
JSONRPC_SUFFIX = "/a2a"


@dataclass(frozen=True, slots=True)
class AgentProvider:
    """Who provides the agent (A2A ``AgentProvider``): an organization and its web site."""

    organization: str
    url: str

    def __post_init__(self) -> None:
        for name in ("organization", "url"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"AgentProvider needs {name} as a non-empty string, not {value!r}")



@dataclass(frozen=True, slots=True)
class SkillSpec:
    id: str
    name: str
    description: str
    tags: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


ExtensionSpec = AgentExtension  # what the card says of an extension is what a publisher gives


@dataclass(frozen=True, slots=True)
class AgentCardSpec:
    name: str
    description: str
    version: str
    url: str  # the JSON-RPC endpoint
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    skills: tuple[SkillSpec, ...] = ()
    # Shown on the extended card only: callers must authenticate to see them.
    extended_skills: tuple[SkillSpec, ...] = ()
    streaming: bool = True
    push_notifications: bool = False
    extended_card: bool = False
    bearer: bool = False
    api_key_header: str | None = None  # e.g. "X-API-Key"; None: no API key scheme
    oauth2: OAuth2Scheme | None = None
    default_input_modes: tuple[str, ...] = ("text/plain", "application/json")
    default_output_modes: tuple[str, ...] = ("text/plain", "application/json")
    extensions: tuple[ExtensionSpec, ...] = ()
    rest_url: str | None = None  # the HTTP+JSON base URL; default: `url` without `/a2a`
    grpc_url: str | None = None  # the gRPC target (HOST:PORT), when the gRPC binding is served

    @property
    def base_url(self) -> str:
        return self.rest_url or self.url.removesuffix(JSONRPC_SUFFIX)

    def skills_for(self, extended: bool) -> tuple[SkillSpec, ...]:
        return self.skills + self.extended_skills if extended else self.skills


def skill_entry(skill: SkillSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"id": skill.id, "name": skill.name, "description": skill.description,
                           "tags": list(skill.tags)}
    if skill.examples:
        out["examples"] = list(skill.examples)
    return out


def _extension(ext: ExtensionSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"uri": ext.uri, "required": ext.required}
    if ext.description is not None:
        out["description"] = ext.description
    params = dict(ext.params) if ext.params is not None else None
    if ext.methods:
        # A2A's AgentExtension has no `methods` field (a strict ProtoJSON reader would
        # refuse the card): the list goes in `params`, the extension's own data.
        params = {"methods": list(ext.methods), **(params or {})}
    if params is not None:
        out["params"] = params
    return out


def _common(spec: AgentCardSpec, extended: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name, "description": spec.description, "version": spec.version}
    if spec.provider is not None:
        out["provider"] = {"organization": spec.provider.organization, "url": spec.provider.url}
    if spec.documentation_url is not None:
        out["documentationUrl"] = spec.documentation_url
    out["defaultInputModes"] = list(spec.default_input_modes)
    out["defaultOutputModes"] = list(spec.default_output_modes)
    out["skills"] = [skill_entry(s) for s in spec.skills_for(extended)]
    return out


def _capabilities(spec: AgentCardSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"streaming": spec.streaming, "pushNotifications": spec.push_notifications}
    if spec.extensions:
        out["extensions"] = [_extension(e) for e in spec.extensions]
    return out


def _scheme_names(spec: AgentCardSpec) -> list[str]:
    return [name for name, on in ((BEARER_SCHEME, spec.bearer), (API_KEY_SCHEME, bool(spec.api_key_header))) if on]


def _requirements(spec: AgentCardSpec) -> list[tuple[str, list[str]]]:
    """(scheme, scopes) of each alternative security requirement."""
    found: list[tuple[str, list[str]]] = [(name, []) for name in _scheme_names(spec)]
    if spec.oauth2 is not None:
        found += [(OAUTH2_SCHEME, list(scopes)) for scopes in spec.oauth2.requirements]
    return found


def card_v1(spec: AgentCardSpec, *, extended: bool = False) -> dict[str, Any]:
    """The A2A 1.0 AgentCard. Each security scheme alone is enough (an OR)."""
    card = _common(spec, extended)
    card["supportedInterfaces"] = [
        {"url": spec.url, "protocolBinding": JSONRPC, "protocolVersion": PROTOCOL_V1},
        {"url": spec.base_url, "protocolBinding": HTTP_JSON, "protocolVersion": PROTOCOL_V1},
        *([{"url": spec.grpc_url, "protocolBinding": GRPC, "protocolVersion": PROTOCOL_V1}] if spec.grpc_url else []),
        # The same endpoints answer 0.3 too (HTTP+JSON 0.3 under /v1).
        {"url": spec.url, "protocolBinding": JSONRPC, "protocolVersion": PROTOCOL_V03},
        {"url": spec.base_url, "protocolBinding": HTTP_JSON, "protocolVersion": PROTOCOL_V03},
        *([{"url": spec.grpc_url, "protocolBinding": GRPC, "protocolVersion": PROTOCOL_V03}] if spec.grpc_url else []),
    ]
    card["capabilities"] = {**_capabilities(spec), "extendedAgentCard": spec.extended_card}
    schemes: dict[str, Any] = {}
    if spec.bearer:
        schemes[BEARER_SCHEME] = {"httpAuthSecurityScheme": {"scheme": HTTP_BEARER}}
    if spec.api_key_header:
        schemes[API_KEY_SCHEME] = {"apiKeySecurityScheme": {"location": "header", "name": spec.api_key_header}}
    if spec.oauth2 is not None:
        schemes[OAUTH2_SCHEME] = spec.oauth2.v1()
    if schemes:
        card["securitySchemes"] = schemes
        card["securityRequirements"] = [{"schemes": {name: {"list": scopes}}} for name, scopes in _requirements(spec)]
    return card


def card_v03(spec: AgentCardSpec, *, extended: bool = False) -> dict[str, Any]:
    """The A2A 0.3 AgentCard, with the JSON-RPC endpoint as its preferred transport."""
    card = _common(spec, extended)
    card.update(_v03_fields(spec), capabilities=_capabilities(spec))
    schemes = _v03_schemes(spec)
    if schemes:
        card["securitySchemes"] = schemes
        card["security"] = [{name: scopes} for name, scopes in _requirements(spec)]
    return card


def card_both(spec: AgentCardSpec) -> dict[str, Any]:
    """The public card that a 1.0 client and a 0.3 client both accept: the 1.0 card
    plus 0.3's top-level fields. The two versions spell ``securitySchemes`` differently
    under one key, so each scheme carries both spellings: the 0.3 ``type`` fields and
    the 1.0 one-of wrapper (each reader ignores the other's keys)."""
    card = card_v1(spec)
    card.update(_v03_fields(spec))
    v03 = _v03_schemes(spec)
    if v03:
        card["securitySchemes"] = {name: {**v03[name], **scheme} for name, scheme in card["securitySchemes"].items()}
        if spec.oauth2 is not None:
            card["securitySchemes"][OAUTH2_SCHEME] = spec.oauth2.both()
        card["security"] = [{name: scopes} for name, scopes in _requirements(spec)]
    return card


def _v03_fields(spec: AgentCardSpec) -> dict[str, Any]:
    """0.3's top-level fields. ``url`` is the main interface; ``additionalInterfaces``
    lists the others (a client adds them to the main one, so it is not repeated)."""
    return {"protocolVersion": CARD_PROTOCOL_VERSION_V03, "url": spec.url, "preferredTransport": JSONRPC,
            "additionalInterfaces": [{"url": spec.base_url, "transport": HTTP_JSON},
                                     *([{"url": spec.grpc_url, "transport": GRPC}] if spec.grpc_url else [])],
            "supportsAuthenticatedExtendedCard": spec.extended_card}


def _v03_schemes(spec: AgentCardSpec) -> dict[str, Any]:
    schemes: dict[str, Any] = {}
    if spec.bearer:
        schemes[BEARER_SCHEME] = {"type": "http", "scheme": HTTP_BEARER}
    if spec.api_key_header:
        schemes[API_KEY_SCHEME] = {"type": "apiKey", "in": "header", "name": spec.api_key_header}
    if spec.oauth2 is not None:
        schemes[OAUTH2_SCHEME] = spec.oauth2.v03()
    return schemes
