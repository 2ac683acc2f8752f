"""A2A extensions: what an agent declares on its card, and which ones a request activates.

An agent lists its extensions in ``capabilities.extensions`` of its card. A client
activates some for a request: over HTTP with the ``A2A-Extensions`` header (0.3
clients send ``X-A2A-Extensions``), over stdio in ``initialize``
(``initializationOptions.a2aExtensions``) or per request (``params["A2A-Extensions"]``).
A standard A2A method whose request leaves a required extension out is refused with
``ExtensionSupportRequiredError``; ``ExtensionSet.activate`` is the one place that
decides, for every transport, through the facade.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import ExtensionSupportRequiredError
from cleveragents.domain.errors import ValidationError

HEADER = "A2A-Extensions"
LEGACY_HEADER = "X-A2A-Extensions"  # A2A 0.3's name
PARAM = HEADER  # the per-request params key, like "A2A-Version"
INIT_OPTION = "a2aExtensions"  # stdio: initializationOptions, for the whole connection
# Reading a card is how a client learns what to activate: never refused.
UNGATED = frozenset({"GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard", "agent/getExtendedCard",
                     "getExtendedAgentCard"})


@dataclass(frozen=True, slots=True)
class AgentExtension:
    """An extension the agent supports, as its card lists it (A2A ``AgentExtension``).
    ``required``: clients must activate it on every A2A request. ``methods``: the
    JSON-RPC methods it adds, by name or glob (``"_acme/report/*"``)."""

    uri: str
    description: str | None = None
    required: bool = False
    params: Mapping[str, Any] | None = None
    methods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri.strip():
            raise TypeError(f"an extension needs a uri (a non-empty string), not {self.uri!r}")
        if "," in self.uri or self.uri != self.uri.strip():
            raise TypeError(f"extension uri {self.uri!r}: no commas or surrounding spaces (headers list uris "
                            "separated by commas)")
        if self.description is not None and not isinstance(self.description, str):
            raise TypeError(f"extension {self.uri}: the description must be a string")
        if not isinstance(self.required, bool):
            raise TypeError(f"extension {self.uri}: required must be True or False")
        if self.params is not None:
            if not isinstance(self.params, Mapping):
                raise TypeError(f"extension {self.uri}: params must be a mapping (a JSON object)")
            try:  # a copy of its own, checked now rather than when the card is first served
                params = json.loads(json.dumps(dict(self.params), allow_nan=False))
            except (TypeError, ValueError) as exc:
                raise TypeError(f"extension {self.uri}: params must be JSON: {exc}") from None
            object.__setattr__(self, "params", params)
        methods = (self.methods,) if isinstance(self.methods, str) else self.methods
        try:
            methods = tuple(methods)
        except TypeError:
            raise TypeError(f"extension {self.uri}: methods must be a list of method names") from None
        if not all(isinstance(m, str) and m.strip() for m in methods):
            raise TypeError(f"extension {self.uri}: methods must be non-empty strings, not {methods!r}")
        object.__setattr__(self, "methods", methods)


def as_extension(value: Any) -> AgentExtension:
    if isinstance(value, AgentExtension):
        return value
    raise TypeError(f"an extension is a cleveragents.AgentExtension, not {type(value).__name__}")


def merge(*groups: Iterable[Any]) -> tuple[AgentExtension, ...]:
    """The extensions of ``groups`` in order, each uri once. The same uri declared twice
    differently is a ``TypeError``: the card could only say one of them."""
    merged: dict[str, AgentExtension] = {}
    for group in groups:
        for value in group:
            extension = as_extension(value)
            known = merged.setdefault(extension.uri, extension)
            if known != extension:
                raise TypeError(f"extension {extension.uri} is declared twice, differently: {known} and {extension}")
    return tuple(merged.values())


def requested(value: Any, where: str = PARAM) -> tuple[str, ...]:
    """The uris a client activates: comma-separated text (a header's value), or a list
    of such strings. Blanks are skipped and each uri is kept once, in order."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ValidationError(f"Invalid params: {where} must be a string of comma-separated uris or a list of them", {
            "errors": [{"loc": [where], "msg": "must be a string or a list of strings", "type": "extensions_type"}],
        })
    uris = (uri.strip() for item in items for uri in item.split(","))
    return tuple(dict.fromkeys(uri for uri in uris if uri))


class ExtensionSet:
    """The extensions an agent supports, and the check every A2A request passes."""

    __slots__ = ("extensions", "supported", "required")

    def __init__(self, extensions: Iterable[AgentExtension] = ()):
        self.extensions = tuple(extensions)
        self.supported = frozenset(e.uri for e in self.extensions)
        self.required = tuple(e.uri for e in self.extensions if e.required)

    def activate(self, method: str, dialect: str, uris: tuple[str, ...]) -> tuple[str, ...]:
        """The requested ``uris`` this agent supports (what the answer echoes). A
        standard method that leaves a required one out raises
        ``ExtensionSupportRequiredError``; card reads and extension methods pass."""
        if self.required and dialect in dialects.STANDARD and method not in UNGATED:
            if missing := [uri for uri in self.required if uri not in uris]:
                raise ExtensionSupportRequiredError(
                    f"{method} requires the extension{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
                    f"activate {'them' if len(missing) > 1 else 'it'} with the {HEADER} header",
                    {"method": method, "missing": missing})
        if not uris or not self.supported:
            return ()
        return tuple(uri for uri in uris if uri in self.supported)


__all__ = ["HEADER", "INIT_OPTION", "LEGACY_HEADER", "PARAM", "AgentExtension", "ExtensionSet", "merge", "requested"]
