"""How the outbound client reads an agent card and speaks each A2A dialect.

``select_interface`` picks the endpoint, binding and protocol version from a card:
a 1.0 card's ``supportedInterfaces`` first (in our order of preference, then the
card's), else a 0.3 card's ``url`` / ``preferredTransport`` / ``additionalInterfaces``.
For each version, JSON-RPC comes first, then gRPC (1.0 only, and only when the
``grpc`` extra is installed).
``Dialect`` holds what differs between 1.0 and 0.3 on the client side: method names
and the shape of request params. Payloads are encoded and decoded by the codecs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from cleveragents.a2a.client_errors import A2AClientError
from cleveragents.a2a.codecs import Codec, get_codec
from cleveragents.a2a.errors import A2AVersionMismatchError
from cleveragents.a2a.version import SUPPORTED_VERSIONS, A2AVersionNegotiator

JSONRPC = "JSONRPC"
GRPC = "GRPC"
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


@dataclass(frozen=True, slots=True)
class Interface:
    url: str
    version: str  # "1.0" or "0.3"
    tenant: str | None = None
    binding: str = JSONRPC  # or GRPC (whose url is a HOST:PORT target, or a grpc(s):// URL)


def _version(value: Any) -> str | None:
    try:
        return A2AVersionNegotiator.normalize(str(value))
    except A2AVersionMismatchError:
        return None


def default_bindings() -> tuple[str, ...]:
    """The bindings the client speaks, in its order of preference."""
    from cleveragents.a2a import grpc_wire

    return (JSONRPC, GRPC) if grpc_wire.available() else (JSONRPC,)


def offered_interfaces(card: Mapping[str, Any], card_url: str,
                       bindings: Sequence[str] = (JSONRPC,)) -> list[Interface]:
    """Every interface in one of ``bindings`` the card offers, in the card's order;
    relative JSON-RPC URLs are resolved against the card's own. gRPC is 1.0 only."""
    found: list[Interface] = []
    for entry in card.get("supportedInterfaces") or ():
        binding = str(entry.get("protocolBinding", "")).upper() if isinstance(entry, Mapping) else ""
        if binding not in bindings or not isinstance(entry.get("url"), str):
            continue
        version = _version(entry.get("protocolVersion") or "1.0")
        if binding == GRPC and version == "1.0":
            found.append(Interface(entry["url"], version, entry.get("tenant") or None, GRPC))
        elif binding == JSONRPC and version:
            found.append(Interface(urljoin(card_url, entry["url"]), version, entry.get("tenant") or None))
    if JSONRPC not in bindings:
        return found
    # A 0.3 card (or the 0.3 half of a card that carries both).
    legacy_version = _version(card.get("protocolVersion") or "0.3")
    if legacy_version and legacy_version != "1.0":
        legacy = [{"url": card.get("url"), "transport": card.get("preferredTransport") or JSONRPC},
                  *[e for e in card.get("additionalInterfaces") or () if isinstance(e, Mapping)]]
        for entry in legacy:
            if str(entry.get("transport", "")).upper() == JSONRPC and isinstance(entry.get("url"), str):
                found.append(Interface(urljoin(card_url, entry["url"]), legacy_version))
    return found


def select_interface(card: Mapping[str, Any], card_url: str, preference: Sequence[str] = SUPPORTED_VERSIONS,
                     bindings: Sequence[str] | None = None) -> Interface:
    """The interface to use: the first version in ``preference`` the card offers, in
    the first of ``bindings`` (default: ``default_bindings()``) that offers it."""
    bindings = tuple(b.upper() for b in bindings) if bindings is not None else default_bindings()
    offered = offered_interfaces(card, card_url, bindings)
    for wanted in (A2AVersionNegotiator.normalize(v) for v in preference):
        for binding in bindings:
            for interface in offered:
                if interface.version == wanted and interface.binding == binding:
                    return interface
    names = " or ".join("gRPC" if b == GRPC else "JSON-RPC" for b in bindings)
    listing = ", ".join(f"{i.binding} {i.version} at {i.url}" for i in offered) or f"no {names} interface"
    raise A2AClientError(
        f"the agent card at {card_url} offers no {names} interface in A2A {' or '.join(preference)} ({listing})",
        {"card_url": card_url, "offered": [i.version for i in offered]}, url=card_url)


@dataclass(frozen=True, slots=True)
class Dialect:
    """Method names and request params of one A2A version, as a client sends them."""

    version: str
    methods: Mapping[str, str]  # operation -> method name

    @property
    def codec(self) -> Codec:
        return get_codec(self.version, lenient=True)  # encodes strictly; reads the peer's answers leniently

    @property
    def v1(self) -> bool:
        return self.version == "1.0"

    def send_params(self, message: Any, *, blocking: bool, history_length: int | None,
                    accepted_output_modes: Sequence[str], push_config: Any, metadata: Mapping[str, Any] | None,
                    streaming: bool = False) -> dict[str, Any]:
        conf: dict[str, Any] = {}
        if not streaming:
            conf["returnImmediately" if self.v1 else "blocking"] = (not blocking) if self.v1 else blocking
        if history_length is not None:
            conf["historyLength"] = history_length
        if accepted_output_modes:
            conf["acceptedOutputModes"] = list(accepted_output_modes)
        if push_config is not None:
            encoded = self.push_config_body(push_config)
            conf["taskPushNotificationConfig" if self.v1 else "pushNotificationConfig"] = (
                encoded if self.v1 else encoded["pushNotificationConfig"])
        params: dict[str, Any] = {"message": self.codec.encode_message(message)}
        if conf:
            params["configuration"] = conf
        if metadata:
            params["metadata"] = dict(metadata)
        return params

    def push_config_body(self, config: Any) -> dict[str, Any]:
        """The encoded config; a blank id or task id is left for the server to fill."""
        encoded = self.codec.encode_push_config(config)
        inner = encoded if self.v1 else encoded["pushNotificationConfig"]
        for body, key in ((inner, "id"), (encoded, "taskId")):
            if not body.get(key):
                body.pop(key, None)
        return encoded

    def config_ref(self, task_id: str, config_id: str | None = None) -> dict[str, Any]:
        """Which push config: 1.0 says ``taskId`` and ``id``; 0.3 ``id`` and
        ``pushNotificationConfigId``."""
        if self.v1:
            return {"taskId": task_id} | ({"id": config_id} if config_id is not None else {})
        return {"id": task_id} | ({"pushNotificationConfigId": config_id} if config_id is not None else {})


_OPERATIONS = ("send", "stream", "get", "list", "cancel", "subscribe", "push_create", "push_get",
               "push_list", "push_delete", "extended_card")
DIALECTS = {
    "1.0": Dialect("1.0", dict(zip(_OPERATIONS, (
        "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
        "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"), strict=True))),
    "0.3": Dialect("0.3", dict(zip(_OPERATIONS, (
        "message/send", "message/stream", "tasks/get", "tasks/list", "tasks/cancel", "tasks/resubscribe",
        "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete", "agent/getAuthenticatedExtendedCard"), strict=True))),
}
# Standard methods answer with the A2A error table; every other method with the extension's.
STANDARD_METHODS = frozenset(name for d in DIALECTS.values() for name in d.methods.values()) | {
    "tasks/subscribe", "agent/getExtendedCard", "getExtendedAgentCard"}
STREAMING_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe",
                               "tasks/subscribe"})


def card_urls(base_url: str) -> list[str]:
    """Where to look for the card of a server given by ``base_url``: the URL itself when
    it names a card, else its well-known paths, then those of its origin."""
    if base_url.endswith(".json"):
        return [base_url]
    urls = [base_url + path for path in CARD_PATHS]
    scheme, _, rest = base_url.partition("://")
    origin = f"{scheme}://{rest.split('/', 1)[0]}"
    if origin != base_url:
        urls += [origin + path for path in CARD_PATHS]
    return urls


def auth_headers(card: Mapping[str, Any], token: str) -> dict[str, str]:
    """A bearer token, unless the card asks only for an API key in a header."""
    schemes = card.get("securitySchemes") or {}
    api_key_header = None
    for scheme in schemes.values() if isinstance(schemes, Mapping) else ():
        if not isinstance(scheme, Mapping):
            continue
        if "httpAuthSecurityScheme" in scheme or scheme.get("type") in ("http", "oauth2", "openIdConnect"):
            return {"Authorization": f"Bearer {token}"}
        api_key = scheme.get("apiKeySecurityScheme") or (scheme if scheme.get("type") == "apiKey" else None)
        if isinstance(api_key, Mapping) and (api_key.get("location") or api_key.get("in")) == "header":
            api_key_header = api_key_header or api_key.get("name")
    if isinstance(api_key_header, str) and api_key_header:
        return {api_key_header: token}
    return {"Authorization": f"Bearer {token}"}
