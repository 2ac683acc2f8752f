"""Who may call in HTTP mode: bearer tokens, API keys and OAuth2 access tokens.

Several secrets of each kind may be configured; any one of them lets a caller in,
to every method. Secrets are compared in constant time, and every configured secret
is compared on every check, so the time taken says nothing about which one (or how
much of it) matched. With no credential configured, everything is open.

A bearer token that is no configured secret is checked as an OAuth2 access token
(a JWT, ``oauth.py``) when OAuth2 is configured; its scopes then decide which methods
it may call (``a2a/access.py``). A missing or bad credential is a 401 with
``WWW-Authenticate`` (RFC 6750's ``error="invalid_token"`` when a token was sent); a
good token without a scope the method needs is a 403 naming the scopes that would do.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cleveragents.a2a.errors import AuthenticationError, AuthorizationError

if TYPE_CHECKING:
    from cleveragents.a2a.access import ScopeGrants
    from cleveragents.a2a.card_oauth2 import OAuth2Scheme
    from cleveragents.config import OAuth2
    from cleveragents.transports.http.oauth import JwtVerifier

from cleveragents.a2a.cards import API_KEY_SCHEME, BEARER_SCHEME
from cleveragents.a2a.facade import CallerIdentity

BEARER_PREFIX = "bearer "
DEFAULT_API_KEY_HEADER = "X-API-Key"
OAUTH2_SCHEME = "oauth2"  # the card's name of the scheme (a2a/card_oauth2.py)
RETRY_AFTER_SECONDS = "10"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who got in. ``scopes`` is ``None`` for a caller that may call every method (a
    configured secret, or no auth at all); ``identity`` is what the services and the
    agent's turns see of it (``None`` without auth)."""

    scopes: frozenset[str] | None = None
    identity: CallerIdentity | None = None


EVERYONE = Caller()
BY_TOKEN = Caller(identity=CallerIdentity(BEARER_SCHEME))
BY_API_KEY = Caller(identity=CallerIdentity(API_KEY_SCHEME))


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request that does not get in: the HTTP status, the error for the body, and headers."""

    status: int
    error: Exception
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OAuth2Access:
    """OAuth2 as the server enforces it: the verifier, what scopes grant, the card's scheme."""

    verifier: JwtVerifier
    grants: ScopeGrants
    scheme: OAuth2Scheme

    @classmethod
    def of(cls, config: OAuth2) -> OAuth2Access:
        """``ValueError`` (one line) for PyJWT missing, a bad key set file or a grant that grants nothing."""
        from cleveragents.a2a.access import ScopeGrants
        from cleveragents.a2a.card_oauth2 import OAuth2Scheme
        from cleveragents.transports.http.oauth import JwtVerifier

        grants = ScopeGrants(config.scopes)
        return cls(JwtVerifier(config), grants, OAuth2Scheme.of(config, grants))


@dataclass(frozen=True, slots=True)
class HttpAuth:
    tokens: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    api_key_header: str = DEFAULT_API_KEY_HEADER
    realm: str = "a2a"
    oauth2: OAuth2Access | None = None

    @classmethod
    def of(cls, tokens: Iterable[str | None] = (), api_keys: Iterable[str | None] = (),
           api_key_header: str = DEFAULT_API_KEY_HEADER, oauth2: OAuth2 | None = None) -> HttpAuth:
        access = OAuth2Access.of(oauth2) if oauth2 is not None else None
        return cls(_secrets(tokens), _secrets(api_keys), api_key_header or DEFAULT_API_KEY_HEADER, oauth2=access)

    @property
    def enabled(self) -> bool:
        return bool(self.tokens or self.api_keys or self.oauth2)

    async def authenticate(self, headers: Mapping[str, str]) -> Caller | Refusal:
        """The caller the request's credentials let in, or why they don't."""
        if not self.enabled:
            return EVERYONE
        by_token = by_key = presented = False
        bearer: str | None = None
        authorization = headers.get("authorization", "")
        if (self.tokens or self.oauth2) and authorization[: len(BEARER_PREFIX)].lower() == BEARER_PREFIX:
            presented, bearer = True, authorization[len(BEARER_PREFIX):].strip()
            by_token = bool(self.tokens) and _matches(bearer, self.tokens)
        if self.api_keys and (key := headers.get(self.api_key_header.lower())) is not None:
            presented = True
            by_key = _matches(key.strip(), self.api_keys)
        if by_token or by_key:
            return BY_TOKEN if by_token else BY_API_KEY
        if bearer and self.oauth2 is not None:
            return await self._oauth2_caller(self.oauth2, bearer)
        if not presented:
            return self.refusal(AuthenticationError("Authentication required", {"schemes": self.schemes()}))
        return self.refusal(AuthenticationError("Invalid credentials", {"schemes": self.schemes()}),
                            'error="invalid_token"' if bearer is not None else None)

    async def _oauth2_caller(self, access: OAuth2Access, token: str) -> Caller | Refusal:
        from cleveragents.transports.http.oauth import KeysUnavailable, TokenRejected

        try:
            verified = await access.verifier.verify(token)
        except TokenRejected as exc:
            error = AuthenticationError(f"Invalid access token: {exc.message}",
                                        {"schemes": self.schemes(), "reason": exc.reason})
            return self.refusal(error, f'error="invalid_token", error_description="{_attribute(exc.message)}"')
        except KeysUnavailable:  # why is in the log: the caller is not told where the keys are
            error = AuthenticationError("The access token can't be checked now: the authorization server's keys "
                                        "could not be read; try again later",
                                        {"schemes": self.schemes(), "reason": "keys_unavailable"})
            return Refusal(503, error, {"Retry-After": RETRY_AFTER_SECONDS})
        return Caller(verified.scopes, CallerIdentity.from_claims(verified.claims, verified.scopes))

    def authorize(self, caller: Caller, method: str) -> Refusal | None:
        """Why ``caller`` may not call ``method`` (a 403), or ``None``."""
        if caller.scopes is None or self.oauth2 is None or self.oauth2.grants.allows(method, caller.scopes):
            return None
        needed = self.oauth2.grants.granting(method) or ()
        message = (f"The access token lacks a scope that grants {method}: any one of {', '.join(needed)}" if needed
                   else f"No scope grants {method}")
        data: dict[str, Any] = {"method": method, "required_scopes": list(needed),
                                "granted_scopes": sorted(caller.scopes), "scheme": OAUTH2_SCHEME}
        challenge = f'Bearer realm="{self.realm}", error="insufficient_scope", scope="{" ".join(needed)}"'
        return Refusal(403, AuthorizationError(message, data), {"WWW-Authenticate": challenge})

    def refusal(self, error: Exception, bearer_error: str | None = None) -> Refusal:
        return Refusal(401, error, {"WWW-Authenticate": self.challenge(bearer_error)})

    def challenge(self, bearer_error: str | None = None) -> str:
        """The ``WWW-Authenticate`` header of a 401; ``bearer_error`` adds RFC 6750's
        attributes to the Bearer challenge."""
        schemes = []
        if self.tokens or self.oauth2:
            schemes.append(f'Bearer realm="{self.realm}"' + (f", {bearer_error}" if bearer_error else ""))
        if self.api_keys:
            schemes.append(f'ApiKey realm="{self.realm}", header="{self.api_key_header}"')
        return ", ".join(schemes)

    def schemes(self) -> list[str]:
        """The card's names of the schemes in force (for error data)."""
        return [name for name, on in ((BEARER_SCHEME, bool(self.tokens)), (API_KEY_SCHEME, bool(self.api_keys)),
                                      (OAUTH2_SCHEME, self.oauth2 is not None)) if on]


def _attribute(text: str) -> str:
    """``text`` as an RFC 6750 attribute value may hold it (no quotes or backslashes)."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "'" if c == '"' else "?" for c in text)[:200]


def _secrets(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def _matches(candidate: str, secrets: tuple[str, ...]) -> bool:
    given = candidate.encode("utf-8")
    found = False
    for secret in secrets:
        found |= hmac.compare_digest(given, secret.encode("utf-8"))
    return found
