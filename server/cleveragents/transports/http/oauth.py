"""OAuth2 access tokens: a JWT is let in when a key of the authorization server's
set signed it, with an algorithm that key allows and the configuration accepts, and
it names the configured issuer and audience and has not expired.

PyJWT does the verifying; it is the ``oauth`` extra, imported only when OAuth2 is
configured. The algorithm comes from the key, never from the token alone: a token
whose ``alg`` is ``none``, a symmetric one (HS256 with the public key as the secret),
or one its key doesn't allow is refused before any signature is checked.

The header's ``typ`` must be ``at+jwt`` (RFC 9068, ``application/at+jwt`` too, in any
case): a JWT of another kind from the same issuer, an ID token above all, is no access
token. ``OAuth2.accept_plain_jwt`` also lets in ``typ: JWT`` and no ``typ``, as some
providers send; a token typed anything else is refused either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cleveragents.config import OAuth2
from cleveragents.transports.http.jwks import KeySet, KeySetUnavailable

OAUTH_EXTRA = "pip install 'cleveragents[oauth]' (PyJWT with its crypto extra)"
MAX_TOKEN_CHARS = 16 * 1024
REQUIRED_CLAIMS = ("exp", "iss", "aud")
ACCESS_TOKEN_TYPE = "at+jwt"
PLAIN_TYPE = "jwt"


class TokenRejected(Exception):
    """A token that does not let its caller in; ``reason`` is a short word for the
    error data, the message says why in a sentence."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


class KeysUnavailable(Exception):
    """The token can't be checked now: the signing keys could not be read."""


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    subject: str | None
    scopes: frozenset[str]
    claims: dict[str, Any]


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and len(token) <= MAX_TOKEN_CHARS


class JwtVerifier:
    """Checks access tokens against ``config``; ``ValueError`` (one line) when PyJWT is
    missing or the key set file is bad."""

    def __init__(self, config: OAuth2):
        try:
            import jwt  # noqa: F401
            from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: F401
        except ImportError:
            raise ValueError(f"OAuth2 is configured, but PyJWT with its crypto extra is not installed: {OAUTH_EXTRA}") \
                from None
        self.config = config
        try:
            self.keys = KeySet(url=config.jwks_url, path=config.jwks_file,  # type: ignore[arg-type]
                               max_age=config.jwks_cache_seconds)
        except KeySetUnavailable as exc:
            raise ValueError(f"oauth2.jwks_file: {exc}") from None
        self.algorithms = frozenset(config.algorithms)

    async def verify(self, token: str) -> VerifiedToken:
        import jwt

        if not looks_like_jwt(token):
            raise TokenRejected("malformed", "The token is not a JWT")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("malformed", "The token's header is not valid JSON") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in self.algorithms:
            raise TokenRejected("algorithm_not_allowed", f"The token's algorithm {str(algorithm)[:20]!r} is not "
                                                         f"accepted (accepted: {', '.join(sorted(self.algorithms))})")
        if kid is not None and not isinstance(kid, str):
            raise TokenRejected("malformed", "The token's key id (kid) is not a string")
        self._check_type(header.get("typ"))
        try:
            candidates = await self.keys.candidates(kid)
        except KeySetUnavailable as exc:
            raise KeysUnavailable(str(exc)) from None
        keys = [key for key in candidates if algorithm in key.algorithms]
        if not candidates:
            raise TokenRejected("unknown_key", f"No signing key {kid[:80]!r} in the authorization server's key set"
                                if kid is not None else "The authorization server's key set has no signing key")
        if not keys:
            raise TokenRejected("algorithm_not_allowed", f"The signing key does not allow the algorithm {algorithm}")
        failure: TokenRejected | None = None
        for key in keys:  # one, unless the token names no key
            try:
                claims = jwt.decode(token, key=key.verifier(algorithm), algorithms=[algorithm],
                                    audience=list(self.config.audiences), issuer=self.config.issuer,
                                    leeway=self.config.leeway, options={"require": list(REQUIRED_CLAIMS)})
            except jwt.InvalidSignatureError:
                failure = TokenRejected("bad_signature", "The token's signature does not verify")
                continue
            except jwt.PyJWTError as exc:
                raise _rejection(exc) from None
            return VerifiedToken(_subject(claims), scopes_of(claims), claims)
        assert failure is not None
        raise failure


    def _check_type(self, typ: Any) -> None:
        kind = media_type(typ) if isinstance(typ, str) else None
        if kind == ACCESS_TOKEN_TYPE or (self.config.accept_plain_jwt and (typ is None or kind == PLAIN_TYPE)):
            return
        accepted = f"{ACCESS_TOKEN_TYPE!r}" + (f" or {PLAIN_TYPE.upper()!r}" if self.config.accept_plain_jwt else "")
        shown = "no typ" if typ is None else f"typ {str(typ)[:40]!r}"
        raise TokenRejected("wrong_token_type", f"The token is not an access token: its header has {shown}, "
                                                f"not {accepted} (RFC 9068)")


def media_type(typ: str) -> str:
    """A ``typ`` as a media type, compared: lower case, without ``application/`` (RFC 7515 §4.1.9)."""
    kind = typ.strip().lower()
    return kind.removeprefix("application/")


def _rejection(exc: Exception) -> TokenRejected:
    import jwt

    for kind, reason, message in (
        (jwt.ExpiredSignatureError, "expired", "The token has expired"),
        (jwt.ImmatureSignatureError, "not_yet_valid", "The token is not valid yet (nbf or iat in the future)"),
        (jwt.InvalidIssuerError, "wrong_issuer", "The token was not issued by the configured issuer"),
        (jwt.InvalidAudienceError, "wrong_audience", "The token is not meant for this server (aud)"),
        (jwt.MissingRequiredClaimError, "missing_claim", f"The token lacks a required claim: {exc}"),
        (jwt.InvalidAlgorithmError, "algorithm_not_allowed", "The token's algorithm is not accepted"),
        (jwt.DecodeError, "malformed", "The token can't be decoded"),
    ):
        if isinstance(exc, kind):
            return TokenRejected(reason, message)
    return TokenRejected("invalid", f"The token is not valid: {type(exc).__name__}")


def _subject(claims: dict[str, Any]) -> str | None:
    subject = claims.get("sub")
    return subject if isinstance(subject, str) else None


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """The scopes a token carries: ``scope`` (space-separated, RFC 9068) and ``scp``
    (a list or a string, as some providers send them)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(v for v in value if isinstance(v, str))
    return frozenset(found)
