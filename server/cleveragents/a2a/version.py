"""A2A protocol version negotiation: ``Major.Minor``, patch ignored."""

from __future__ import annotations

from collections.abc import Iterable

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import A2aVersionMismatchError

SUPPORTED_VERSIONS = ("1.0", "0.3")
DEFAULT_VERSION = "1.0"
# An empty A2A-Version header means 0.3 (the A2A specification).
EMPTY_HEADER_VERSION = "0.3"

_DIALECT_BY_VERSION = {version: dialect for dialect, version in dialects.PROTOCOL_VERSION.items()}


class A2aVersionNegotiator:
    """Picks the protocol version to speak with a peer."""

    def __init__(self, supported: Iterable[str] = SUPPORTED_VERSIONS, default: str = DEFAULT_VERSION):
        self.supported = tuple(self.normalize(v) for v in supported)
        self.default = self.normalize(default)
        if self.default not in self.supported:
            raise ValueError(f"default version {default!r} is not among the supported versions")

    @staticmethod
    def normalize(version: str) -> str:
        """``"1.0.1"`` -> ``"1.0"``; ``"1"`` -> ``"1.0"``. Raises on anything else."""
        text = str(version).strip().lstrip("vV")
        parts = text.split(".")
        if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            raise A2aVersionMismatchError(
                f"Malformed A2A version {version!r}: expected Major.Minor",
                {"requested": str(version)},
            )
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
        return f"{major}.{minor}"

    def is_supported(self, version: str) -> bool:
        try:
            return self.normalize(version) in self.supported
        except A2aVersionMismatchError:
            return False

    def negotiate(self, requested: str | Iterable[str] | None = None) -> str:
        """The best supported version among ``requested`` (a version, a comma-separated
        list, or an iterable). ``None`` or blank means the default."""
        if requested is None:
            return self.default
        offers = requested.split(",") if isinstance(requested, str) else list(requested)
        offers = [o.strip() for o in offers if str(o).strip()]
        if not offers:
            return self.default
        for version in self.supported:
            for offer in offers:
                if self.is_supported(offer) and self.normalize(offer) == version:
                    return version
        raise A2aVersionMismatchError(
            f"A2A version {', '.join(offers)} is not supported; supported: {', '.join(self.supported)}",
            {"requested": ", ".join(offers), "supported": list(self.supported)},
        )

    @staticmethod
    def dialect_for(version: str) -> str:
        return _DIALECT_BY_VERSION[version]
