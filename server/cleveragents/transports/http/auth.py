"""Bearer tokens and API keys for HTTP mode.

Several secrets of each kind may be configured; any one of them lets a caller in.
Secrets are compared in constant time, and every configured secret is compared on
every check, so the time taken says nothing about which one (or how much of it)
matched. With no secret configured, everything is open.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cleveragents.a2a.cards import API_KEY_SCHEME, BEARER_SCHEME

BEARER_PREFIX = "bearer "
DEFAULT_API_KEY_HEADER = "X-API-Key"


@dataclass(frozen=True, slots=True)
class HttpAuth:
    tokens: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    api_key_header: str = DEFAULT_API_KEY_HEADER
    realm: str = "a2a"

    @classmethod
    def of(cls, tokens: Iterable[str | None] = (), api_keys: Iterable[str | None] = (),
           api_key_header: str = DEFAULT_API_KEY_HEADER) -> HttpAuth:
        return cls(_secrets(tokens), _secrets(api_keys), api_key_header or DEFAULT_API_KEY_HEADER)

    @property
    def enabled(self) -> bool:
        return bool(self.tokens or self.api_keys)

    def allows(self, headers: Mapping[str, str]) -> bool:
        """Whether the request's credentials match a configured secret."""
        if not self.enabled:
            return True
        presented = False
        ok = False
        authorization = headers.get("authorization", "")
        if self.tokens and authorization[: len(BEARER_PREFIX)].lower() == BEARER_PREFIX:
            presented = True
            ok |= _matches(authorization[len(BEARER_PREFIX):].strip(), self.tokens)
        if self.api_keys and (key := headers.get(self.api_key_header.lower())) is not None:
            presented = True
            ok |= _matches(key.strip(), self.api_keys)
        return presented and ok

    def challenge(self) -> str:
        """The ``WWW-Authenticate`` header of a 401."""
        schemes = []
        if self.tokens:
            schemes.append(f'Bearer realm="{self.realm}"')
        if self.api_keys:
            schemes.append(f'ApiKey realm="{self.realm}", header="{self.api_key_header}"')
        return ", ".join(schemes)

    def schemes(self) -> list[str]:
        """The card's names of the schemes in force (for error data)."""
        return [name for name, on in ((BEARER_SCHEME, bool(self.tokens)), (API_KEY_SCHEME, bool(self.api_keys))) if on]


def _secrets(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def _matches(candidate: str, secrets: tuple[str, ...]) -> bool:
    given = candidate.encode("utf-8")
    found = False
    for secret in secrets:
        found |= hmac.compare_digest(given, secret.encode("utf-8"))
    return found
