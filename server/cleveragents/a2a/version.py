"""A2A protocol version negotiation: ``Major.Minor``, patch ignored."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import A2AVersionMismatchError

SUPPORTED_VERSIONS = ("1.0", "0.3")
DEFAULT_VERSION = "1.0"
# An empty A2A-Version header means 0.3 (the A2A specification).
EMPTY_HEADER_VERSION = "0.3"

_DIALECT_BY_VERSION = {version: dialect for dialect, version in dialects.PROTOCOL_VERSION.items()}
# Major[.Minor[.Patch]], ASCII digits only (``str.isdigit`` also takes "²", which int() refuses),
# nine at most: a longer number is no version, and int() refuses more than 4,300 digits.
_VERSION = re.compile(r"[vV]*([0-9]{1,9})(?:\.([0-9]{1,9})(?:\.[0-9]{1,9})?)?")
_SHOWN = 40  # characters of a bad value quoted in a message (the data holds all of it)
_NEGOTIATED_KEPT = 64  # version strings whose negotiation is remembered


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _malformed(value: object, supported: Iterable[str]) -> A2AVersionMismatchError:
    """The error for a version that is not ``Major.Minor`` text; the data holds the value as sent."""
    if isinstance(value, str):
        message = f"Malformed A2A version {_clip(value)!r}: expected Major.Minor"
    else:
        message = f"Malformed A2A version {_clip(json.dumps(value, default=repr))}: expected a string such as \"1.0\""
    return A2AVersionMismatchError(message, {"requested": value, "supported": list(supported)})


class A2AVersionNegotiator:
    """Picks the protocol version to speak with a peer."""

    def __init__(self, supported: Iterable[str] = SUPPORTED_VERSIONS, default: str = DEFAULT_VERSION):
        self.supported = tuple(self.normalize(v) for v in supported)
        self.default = self.normalize(default)
        if self.default not in self.supported:
            raise ValueError(f"default version {default!r} is not among the supported versions")
        # What a version string negotiates to: a transport gives the same one with
        # every call (a header, what ``initialize`` said). Bounded: clients choose them.
        self._negotiated: dict[str, str] = {}

    @staticmethod
    def normalize(version: str) -> str:
        """``"1.0.1"`` -> ``"1.0"``; ``"1"`` -> ``"1.0"``. Raises on anything else,
        a value that is not a string included."""
        match = _VERSION.fullmatch(version.strip()) if isinstance(version, str) else None
        if match is None:
            raise _malformed(version, SUPPORTED_VERSIONS)
        return f"{int(match[1])}.{int(match[2] or 0)}"

    def check_requested(self, value: object) -> str | None:
        """A version as a client sent it (an ``A2A-Version`` param, ``a2aVersion`` in
        ``initialize``): ``None`` when none was given, else the version to speak. A
        value that is not a string is refused like an unknown version, with its value."""
        if value is None:
            return None
        if not isinstance(value, str):
            raise _malformed(value, self.supported)
        return self.negotiate(value) if value.strip() else None

    def is_supported(self, version: str) -> bool:
        try:
            return self.normalize(version) in self.supported
        except A2AVersionMismatchError:
            return False

    def negotiate(self, requested: str | Iterable[str] | None = None) -> str:
        """The best supported version among ``requested`` (a version, a comma-separated
        list, or an iterable). ``None`` or blank means the default."""
        if requested is None:
            return self.default
        if isinstance(requested, str) and (known := self._negotiated.get(requested)) is not None:
            return known
        offers = requested.split(",") if isinstance(requested, str) else list(requested)
        if not all(isinstance(offer, str) for offer in offers):
            raise _malformed(requested, self.supported)
        offers = [o.strip() for o in offers if o.strip()]
        if not offers:
            return self.default
        for version in self.supported:
            for offer in offers:
                if self.is_supported(offer) and self.normalize(offer) == version:
                    if isinstance(requested, str) and len(self._negotiated) < _NEGOTIATED_KEPT:
                        self._negotiated[requested] = version
                    return version
        raise A2AVersionMismatchError(
            f"A2A version {_clip(', '.join(offers))} is not supported; supported: {', '.join(self.supported)}",
            {"requested": requested if isinstance(requested, str) else offers, "supported": list(self.supported)},
        )

    @staticmethod
    def dialect_for(version: str) -> str:
        return _DIALECT_BY_VERSION[version]

# The earlier spelling of the prefix, kept so existing imports keep working.
A2aVersionNegotiator = A2AVersionNegotiator
