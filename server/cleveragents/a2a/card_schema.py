"""The fields of the A2A 1.0 ``AgentCard`` message, and the view of a card that a
signature covers (A2A 1.0 §8.4.1).

A signer and a verifier must canonicalize the same JSON. Readers parse a card into the
``AgentCard`` schema, so the signed view keeps only that schema's fields: the 0.3
fields a card may also carry for older clients (``url``, ``preferredTransport``, ...)
are not signed. Default values are left out, as ProtoJSON leaves them out: empty
strings, lists and objects anywhere, and ``false`` where the field has no presence.
That is the form the official SDK canonicalizes, so cards signed by either verify on
the other. A test checks this table against the SDK's ``a2a.proto`` descriptors.

A 0.3 card (``/.well-known/agent.json``) is read two ways, so its signatures cover
both: as a 0.3 reader canonicalizes it (``v03_signing_view``: the 0.3 fields without
their defaults), and as a 1.0 reader maps it into the 1.0 schema (``v1_reading``, then
``signing_view``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

_ABSENT = object()
STRUCT = "struct"  # google.protobuf.Struct: any JSON object, kept whole
PLAIN_BOOL = "bool"  # a bool without presence: false is its default, left out
_SCOPES = ("map", "string")
# message name -> {JSON field name: kind}; [kind] is a repeated field, ("map", kind) a map.
SCHEMA: dict[str, dict[str, Any]] = {
    "AgentCard": {
        "name": "string", "description": "string", "supportedInterfaces": ["AgentInterface"],
        "provider": "AgentProvider", "version": "string", "documentationUrl": "string",
        "capabilities": "AgentCapabilities", "securitySchemes": ("map", "SecurityScheme"),
        "securityRequirements": ["SecurityRequirement"], "defaultInputModes": ["string"],
        "defaultOutputModes": ["string"], "skills": ["AgentSkill"], "signatures": ["AgentCardSignature"],
        "iconUrl": "string",
    },
    "AgentInterface": {"url": "string", "protocolBinding": "string", "tenant": "string", "protocolVersion": "string"},
    "AgentProvider": {"url": "string", "organization": "string"},
    # streaming, pushNotifications and extendedAgentCard are `optional`: false is kept.
    "AgentCapabilities": {"streaming": "optional_bool", "pushNotifications": "optional_bool",
                          "extensions": ["AgentExtension"], "extendedAgentCard": "optional_bool"},
    "AgentExtension": {"uri": "string", "description": "string", "required": PLAIN_BOOL, "params": STRUCT},
    "SecurityScheme": {"apiKeySecurityScheme": "APIKeySecurityScheme", "httpAuthSecurityScheme": "HTTPAuthSecurityScheme",
                       "oauth2SecurityScheme": "OAuth2SecurityScheme",
                       "openIdConnectSecurityScheme": "OpenIdConnectSecurityScheme",
                       "mtlsSecurityScheme": "MutualTlsSecurityScheme"},
    "APIKeySecurityScheme": {"description": "string", "location": "string", "name": "string"},
    "HTTPAuthSecurityScheme": {"description": "string", "scheme": "string", "bearerFormat": "string"},
    "OAuth2SecurityScheme": {"description": "string", "flows": "OAuthFlows", "oauth2MetadataUrl": "string"},
    "OAuthFlows": {"authorizationCode": "AuthorizationCodeOAuthFlow", "clientCredentials": "ClientCredentialsOAuthFlow",
                   "implicit": "ImplicitOAuthFlow", "password": "PasswordOAuthFlow", "deviceCode": "DeviceCodeOAuthFlow"},
    "AuthorizationCodeOAuthFlow": {"authorizationUrl": "string", "tokenUrl": "string", "refreshUrl": "string",
                                   "scopes": _SCOPES, "pkceRequired": PLAIN_BOOL},
    "ClientCredentialsOAuthFlow": {"tokenUrl": "string", "refreshUrl": "string", "scopes": _SCOPES},
    "ImplicitOAuthFlow": {"authorizationUrl": "string", "refreshUrl": "string", "scopes": _SCOPES},
    "PasswordOAuthFlow": {"tokenUrl": "string", "refreshUrl": "string", "scopes": _SCOPES},
    "DeviceCodeOAuthFlow": {"deviceAuthorizationUrl": "string", "tokenUrl": "string", "refreshUrl": "string",
                            "scopes": _SCOPES},
    "OpenIdConnectSecurityScheme": {"description": "string", "openIdConnectUrl": "string"},
    "MutualTlsSecurityScheme": {"description": "string"},
    "SecurityRequirement": {"schemes": ("map", "StringList")},
    "StringList": {"list": ["string"]},
    "AgentSkill": {"id": "string", "name": "string", "description": "string", "tags": ["string"],
                   "examples": ["string"], "inputModes": ["string"], "outputModes": ["string"],
                   "securityRequirements": ["SecurityRequirement"]},
    "AgentCardSignature": {"protected": "string", "signature": "string", "header": STRUCT},
}

def signing_view(card: Mapping[str, Any]) -> dict[str, Any]:
    """What a signature of ``card`` covers: its ``AgentCard`` fields without
    ``signatures`` and without default values."""
    view = _value("AgentCard", {k: v for k, v in card.items() if k != "signatures"})
    return view if isinstance(view, dict) else {}


def _value(kind: Any, value: Any) -> Any:
    """``value`` read as ``kind``; None when it is a default (left out)."""
    if isinstance(kind, list):
        if not isinstance(value, list):
            return value  # the wrong type: kept, so the signature does not cover less than was sent
        items = [v for v in (_value(kind[0], item) for item in value) if not _is_empty(v)]
        return items or None
    if isinstance(kind, tuple):
        if not isinstance(value, dict):
            return value
        entries = {k: v for k, v in ((k, _value(kind[1], item)) for k, item in value.items()) if not _is_empty(v)}
        return entries or None
    if kind == STRUCT:
        return _clean(value)
    if kind == PLAIN_BOOL:
        return None if value is False else value
    if kind in ("string", "optional_bool"):
        return None if value == "" else value
    if not isinstance(value, dict):
        return value
    fields = SCHEMA[kind]
    out = {name: v for name, v in ((n, _value(fields[n], item)) for n, item in value.items() if n in fields)
           if not _is_empty(v)}
    return out or None


def _clean(value: Any) -> Any:
    """A Struct's content without empty strings, lists and objects (at any depth)."""
    if isinstance(value, dict):
        out = {k: c for k, c in ((k, _clean(v)) for k, v in value.items()) if not _is_empty(c)}
        return out or None
    if isinstance(value, list):
        items = [c for c in (_clean(v) for v in value) if not _is_empty(c)]
        return items or None
    return None if value == "" else value


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


# -- the 0.3 card -------------------------------------------------------------------
# 0.3 card fields whose value here is the 0.3 schema's default, which a 0.3 reader's
# canonical form leaves out (a security scheme's `type` is a constant: always left out).
V03_DEFAULTS = {"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"}
_V03_SCHEME_TYPES = {"apiKey": "apiKeySecurityScheme", "http": "httpAuthSecurityScheme",
                     "oauth2": "oauth2SecurityScheme", "openIdConnect": "openIdConnectSecurityScheme",
                     "mutualTLS": "mtlsSecurityScheme"}


def v03_signing_view(card: Mapping[str, Any]) -> dict[str, Any]:
    """What a 0.3 reader canonicalizes of a 0.3 card: the card without ``signatures``,
    its default values and the schemes' constant ``type``, and without empty strings,
    lists and objects."""
    view = {k: v for k, v in card.items() if k != "signatures" and V03_DEFAULTS.get(k, _ABSENT) != v}
    schemes = view.get("securitySchemes")
    if isinstance(schemes, dict):
        view["securitySchemes"] = {name: {k: v for k, v in s.items() if k != "type"} if isinstance(s, dict) else s
                                   for name, s in schemes.items()}
    cleaned = _clean(view)
    return cleaned if isinstance(cleaned, dict) else {}


def v1_reading(card: Mapping[str, Any]) -> dict[str, Any]:
    """A 0.3 card as a 1.0 reader takes it in (A2A 1.0's mapping of the 0.3 fields):
    ``url``, ``preferredTransport``, ``protocolVersion`` and ``additionalInterfaces``
    become ``supportedInterfaces``, ``security`` ``securityRequirements``, a scheme's
    ``type`` its one-of wrapper, ``supportsAuthenticatedExtendedCard`` the capability.
    A 1.0 card comes back as it is (a copy)."""
    read = copy.deepcopy(dict(card))
    if read.pop("supportsAuthenticatedExtendedCard", None) and isinstance(read.setdefault("capabilities", {}), dict):
        read["capabilities"].setdefault("extendedAgentCard", True)
    url, transport = read.pop("url", None), read.pop("preferredTransport", "JSONRPC")
    version, others = read.pop("protocolVersion", "0.3.0"), read.pop("additionalInterfaces", None) or []
    if "supportedInterfaces" not in read and url:
        read["supportedInterfaces"] = [{"url": url, "protocolBinding": transport, "protocolVersion": version}] + [
            {"url": i.get("url"), "protocolBinding": i.get("transport"), "protocolVersion": version}
            for i in others if isinstance(i, dict)]
    _requirements_of(read)
    for skill in read.get("skills") or ():
        if isinstance(skill, dict):
            _requirements_of(skill)
    schemes = read.get("securitySchemes")
    if isinstance(schemes, dict):
        for name, scheme in schemes.items():
            kind = scheme.get("type") if isinstance(scheme, dict) else None
            if isinstance(kind, str) and (wrapper := _V03_SCHEME_TYPES.get(kind)) is not None:
                body = {k: v for k, v in scheme.items() if k != "type"}
                if wrapper == "apiKeySecurityScheme" and "in" in body:
                    body["location"] = body.pop("in")
                schemes[name] = {wrapper: body}
    return read


def _requirements_of(holder: dict[str, Any]) -> None:
    security = holder.pop("security", None)
    if "securityRequirements" not in holder and isinstance(security, list):
        holder["securityRequirements"] = [{"schemes": {name: {"list": scopes} for name, scopes in entry.items()}}
                                          for entry in security if isinstance(entry, dict)]
