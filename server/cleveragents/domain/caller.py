"""CallerIdentity: who made a call, as the transport's authentication established it.

Over HTTP it is the credential that let the caller in: an OAuth2 access token (its
subject, client, scopes and verified claims) or one of the configured secrets (a
bearer token or an API key, which name no one). A call that no authentication
guarded (stdio, in-process, an HTTP server without credentials) has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

OAUTH2 = "oauth2"  # the card's name of the scheme (a2a/card_oauth2.py)


@dataclass(frozen=True, slots=True)
class CallerIdentity:
    """``scheme`` is the agent card's name of the security scheme the caller used
    (``oauth2``, ``bearerAuth`` or ``apiKey``). ``scopes`` are those an OAuth2 token
    carries; ``claims`` are its verified claims, read-only (empty for a secret)."""

    scheme: str
    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    issuer: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", frozenset(self.scopes))
        if not isinstance(self.claims, MappingProxyType):
            object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any], scopes: frozenset[str]) -> CallerIdentity:
        """The identity an access token's verified claims give: ``sub``, ``iss``, and the
        client from ``client_id`` (RFC 9068), else ``azp`` (OpenID Connect)."""
        return cls(OAUTH2, _text(claims.get("sub")), _text(claims.get("client_id")) or _text(claims.get("azp")),
                   scopes, _text(claims.get("iss")), claims)

    @property
    def holder(self) -> tuple[str | None, str] | None:
        """Whose share of a per-caller bound this caller takes: an access token's issuer
        and subject, or None for a caller with no subject (a configured secret)."""
        return (self.issuer, self.subject) if self.subject is not None else None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def to_dict(self) -> dict[str, Any]:
        """The identity as JSON (scopes sorted; claims as they came)."""
        return {"scheme": self.scheme, "subject": self.subject, "client_id": self.client_id,
                "scopes": sorted(self.scopes), "issuer": self.issuer, "claims": dict(self.claims)}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
