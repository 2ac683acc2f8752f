"""Signed agent cards (A2A 1.0 §8.4): JWS signatures with a detached payload, over
the RFC 8785 (JCS) canonical form of the card without its ``signatures``.

``CardSigner`` adds one signature per configured key (two while a key is being
rotated). ``CardVerifier`` checks a peer's card against trusted keys, from files or
a JWK Set URL, under a policy: ``off`` (no check), ``warn`` (log and go on) or
``require`` (refuse a card without a valid signature). A card's own ``jku`` is never
followed: a card that could name where its keys are could vouch for itself.

What is canonicalized is ``card_schema.signing_view``: the card's A2A 1.0 fields
without default values, as the official SDK canonicalizes it. A signature over the
card's JSON as sent, minus ``signatures``, verifies too.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from cleveragents.a2a.card_keys import CardKey, CardKeyError, keys_from_jwks, load_signing_keys, load_trusted_keys
from cleveragents.a2a.card_schema import signing_view, v03_signing_view, v1_reading
from cleveragents.a2a.errors import InvalidAgentResponseError
from cleveragents.http_clients import tls_context

if TYPE_CHECKING:
    from cleveragents.config import Settings

logger = logging.getLogger(__name__)

Policy = Literal["off", "warn", "require"]
POLICIES: tuple[str, ...] = ("off", "warn", "require")
JOSE_TYPE = "JOSE"
MAX_SIGNATURES = 16  # a card's signatures looked at; more is not a rotation, it is noise
MAX_JWKS_BYTES = 64 * 1024
JWKS_MAX_AGE = 300.0  # seconds a fetched JWK Set is used before it is read again
JWKS_RETRY_AFTER = 30.0  # an unknown kid reads the set again, at most this often


class CardSignatureError(InvalidAgentResponseError):
    """A peer's agent card has no valid signature from a trusted key (policy ``require``)."""

    default_message = "The agent card's signature did not verify"


def canonical_payloads(card: Mapping[str, Any]) -> list[bytes]:
    """The bytes a signature of ``card`` may cover: its signed view first, then the
    card as sent without ``signatures``, then, for a 0.3 card, its views for 1.0 and
    0.3 readers (each once)."""
    import rfc8785

    payloads = [rfc8785.dumps(signing_view(card))]
    try:
        whole = rfc8785.dumps({k: v for k, v in card.items() if k != "signatures"})
    except (rfc8785.CanonicalizationError, RecursionError, TypeError, ValueError):
        return payloads
    payloads.append(whole)
    if "supportedInterfaces" not in card and "url" in card:
        payloads += v03_payloads(card)
    return list(dict.fromkeys(payloads))


def v03_payloads(card: Mapping[str, Any]) -> list[bytes]:
    """What readers of a 0.3 card canonicalize: a 1.0 reader its 1.0 reading (JCS), a
    0.3 reader the 0.3 view (JCS, and the sorted, ASCII-escaped JSON the 0.3 SDK makes,
    which differs from JCS only for non-ASCII text)."""
    import rfc8785

    view = v03_signing_view(card)
    ascii_json = json.dumps(view, separators=(",", ":"), sort_keys=True).encode("ascii")
    return list(dict.fromkeys([rfc8785.dumps(signing_view(v1_reading(card))), rfc8785.dumps(view), ascii_json]))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CardSigner:
    """Signs cards with each key; the same card content is signed once and remembered."""

    def __init__(self, keys: Sequence[CardKey], jku: str | None = None):
        if not keys:
            raise CardKeyError("a card signer needs at least one key")
        self.keys = tuple(keys)
        self.jku = jku
        self._signed: dict[bytes, list[dict[str, Any]]] = {}

    @classmethod
    def from_files(cls, references: Sequence[str], jku: str | None = None, base: Path | None = None) -> CardSigner:
        return cls(load_signing_keys(references, base), jku)

    def signatures(self, card: Mapping[str, Any]) -> list[dict[str, Any]]:
        import rfc8785

        payload = rfc8785.dumps(signing_view(card))
        if (known := self._signed.get(payload)) is not None:
            return known
        made = [self._sign(payload, key) for key in self.keys]
        self._remember(payload, made)
        return made

    def _remember(self, payload: bytes, made: list[dict[str, Any]]) -> None:
        if len(self._signed) >= 16:  # bounded: cards change rarely; an extended card callback may vary
            self._signed.pop(next(iter(self._signed)))
        self._signed[payload] = made

    def jwks(self) -> dict[str, Any]:
        """The public keys, as the JWK Set to publish (at the ``jku``)."""
        from cleveragents.a2a.card_keys import public_jwk

        return {"keys": [public_jwk(key) for key in self.keys]}

    def sign(self, card: Mapping[str, Any]) -> dict[str, Any]:
        """``card`` with its ``signatures``."""
        return {**card, "signatures": self.signatures(card)}

    def sign_v03(self, card: Mapping[str, Any]) -> dict[str, Any]:
        """A 0.3 card with its ``signatures``: per key, one over each view its readers
        canonicalize (``v03_payloads``); a reader accepts the card when one verifies."""
        payloads = v03_payloads({k: v for k, v in card.items() if k != "signatures"})
        key = b"\0".join(payloads)
        if (known := self._signed.get(key)) is None:
            known = [self._sign(payload, k) for k in self.keys for payload in payloads]
            self._remember(key, known)
        return {**card, "signatures": known}

    def with_jku(self, jku: str) -> CardSigner:
        """The same keys, their signatures naming ``jku``."""
        return CardSigner(self.keys, jku)

    def _sign(self, payload: bytes, key: CardKey) -> dict[str, Any]:
        from jwt import api_jws

        header: dict[str, Any] = {"alg": key.algorithm, "kid": key.kid, "typ": JOSE_TYPE}
        if self.jku:
            header["jku"] = self.jku
        token = api_jws.encode(payload, key.key, algorithm=key.algorithm, headers=header)
        protected, _, signature = token.split(".")
        return {"protected": protected, "signature": signature}


@dataclass(frozen=True, slots=True)
class Verdict:
    """``valid`` (``kid`` names the key), ``unsigned``, ``unknown_kid`` (no trusted key
    has the kid of any signature) or ``invalid``."""

    status: Literal["valid", "unsigned", "unknown_kid", "invalid"]
    reason: str
    kid: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "valid"


class TrustedKeys:
    """The keys a verifier trusts: fixed ones, and a JWK Set fetched from a URL (https,
    or http on loopback), re-read after ``JWKS_MAX_AGE`` or when an unknown kid shows
    up (no more often than ``JWKS_RETRY_AFTER``), so a peer's new key is picked up."""

    def __init__(self, keys: Sequence[CardKey] = (), jwks_url: str | None = None, *, timeout: float = 10.0):
        if jwks_url is not None:
            _check_jwks_url(jwks_url)
        self.fixed = tuple(keys)
        self.jwks_url = jwks_url
        self.timeout = timeout
        self._fetched: tuple[CardKey, ...] = ()
        self._fetched_at: float | None = None

    @classmethod
    def from_files(cls, references: Sequence[str], jwks_url: str | None = None, base: Path | None = None,
                   timeout: float = 10.0) -> TrustedKeys:
        return cls(load_trusted_keys(references, base), jwks_url, timeout=timeout)

    async def find(self, kid: str) -> list[CardKey]:
        found = [k for k in self.fixed if k.kid == kid]
        if found or self.jwks_url is None:
            return found
        now = time.monotonic()
        age = None if self._fetched_at is None else now - self._fetched_at
        found = [k for k in self._fetched if k.kid == kid]
        stale = age is None or age > JWKS_MAX_AGE or (not found and age > JWKS_RETRY_AFTER)
        if stale:
            await self._refresh(now)
            found = [k for k in self._fetched if k.kid == kid]
        return found

    async def _refresh(self, now: float) -> None:
        import httpx

        from cleveragents.a2a.client_errors import A2AClientError
        from cleveragents.a2a.client_wire import TransportErrors, read_bounded

        assert self.jwks_url is not None
        self._fetched_at = now  # a failing URL is not asked again at once
        try:
            # The timeout bounds the whole fetch: the check, and the connect waiting on it.
            async with (TransportErrors("GET JWK Set", self.jwks_url, self.timeout, deadline=True),
                        httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, verify=tls_context()) as http,
                        http.stream("GET", self.jwks_url, headers={"Accept": "application/json"}) as response):
                body = await read_bounded(response, "GET JWK Set", self.jwks_url, MAX_JWKS_BYTES)
                status = response.status_code
            if status != 200:
                raise CardKeyError(f"the JWK Set at {self.jwks_url} answered HTTP {status}")
            self._fetched = keys_from_jwks(json.loads(body), self.jwks_url)
        except (A2AClientError, InvalidAgentResponseError, ValueError, CardKeyError) as exc:
            logger.warning("could not read the trusted JWK Set at %s: %s", self.jwks_url, exc)


def _check_jwks_url(url: str) -> None:
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise CardKeyError("the trusted JWK Set URL must be https:// (http:// on loopback only)", {"url": url})


class CardVerifier:
    """Checks agent card signatures against ``trusted`` keys under ``policy``."""

    def __init__(self, policy: Policy | str, trusted: TrustedKeys | None = None):
        if policy not in POLICIES:
            raise CardKeyError(f"card signature policy is one of {', '.join(POLICIES)}, not {policy!r}",
                               {"policy": policy})
        self.policy: str = policy
        self.trusted = trusted or TrustedKeys()
        if policy == "require" and not self.trusted.fixed and self.trusted.jwks_url is None:
            raise CardKeyError("card signature policy 'require' needs trusted keys or a JWK Set URL")

    async def verify(self, card: Mapping[str, Any]) -> Verdict:
        """Whether one signature of ``card`` is valid under a trusted key."""
        signatures = card.get("signatures")
        if not isinstance(signatures, list) or not signatures:
            return Verdict("unsigned", "the card has no signatures")
        payloads: list[bytes] | None = None
        kids: list[str] = []
        known_kid = False
        for entry in signatures[:MAX_SIGNATURES]:
            header = _protected_header(entry)
            if header is None or not isinstance(kid := header.get("kid"), str):
                continue
            kids.append(kid)
            if header.get("crit") is not None or header.get("b64") is not None:
                continue  # extensions this verifier does not implement (RFC 7515 §4.1.11)
            keys = await self.trusted.find(kid)
            known_kid = known_kid or bool(keys)
            for key in keys:
                if header.get("alg") != key.algorithm:
                    continue
                if payloads is None:
                    payloads = _payloads_or_empty(card)
                if any(_verifies(entry, payload, key) for payload in payloads):
                    return Verdict("valid", f"signed by the trusted key {kid!r}", kid)
        if not kids:
            return Verdict("invalid", "no signature has a readable protected header with a kid")
        if not known_kid:
            return Verdict("unknown_kid", f"no trusted key has the kid {' or '.join(map(repr, kids[:4]))}")
        return Verdict("invalid", "no signature verifies under the trusted key with its kid")

    async def check(self, card: Mapping[str, Any], url: str) -> Verdict | None:
        """Apply the policy to the card read at ``url``: None when off; the verdict when
        it passes or the policy is ``warn`` (logged); ``CardSignatureError`` otherwise."""
        if self.policy == "off":
            return None
        verdict = await self.verify(card)
        if verdict.ok:
            return verdict
        message = f"the agent card at {url} is not trusted: {verdict.reason}"
        if self.policy == "warn":
            logger.warning("%s (card signature policy: warn)", message)
            return verdict
        raise CardSignatureError(message, {"url": url, "status": verdict.status, "reason": verdict.reason,
                                           "policy": self.policy})


def _protected_header(entry: Any) -> dict[str, Any] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("protected"), str) \
            or not isinstance(entry.get("signature"), str):
        return None
    try:
        header = json.loads(_unb64(entry["protected"]))
    except (binascii.Error, ValueError):
        return None
    return header if isinstance(header, dict) else None


def _payloads_or_empty(card: Mapping[str, Any]) -> list[bytes]:
    try:
        return canonical_payloads(card)
    except Exception:  # noqa: BLE001 - a card with no canonical form has no valid signature
        return []


def _verifies(entry: Mapping[str, Any], payload: bytes, key: CardKey) -> bool:
    import jwt
    from jwt import api_jws

    token = f"{entry['protected']}.{_b64(payload)}.{entry['signature']}"
    try:
        api_jws.decode_complete(token, key.key, algorithms=[key.algorithm])
    except (jwt.PyJWTError, ValueError, TypeError):
        return False
    return True


def signer_from_settings(settings: Settings) -> CardSigner | None:
    """The signer of the served cards that ``settings`` configure, or None."""
    from cleveragents.a2a.card_keys import references

    refs = references(settings.card_signing_keys)
    if not refs:
        return None
    return CardSigner.from_files(refs, settings.card_signing_jku, settings.resolved_workspace)


def verifier_from_settings(settings: Settings) -> CardVerifier | None:
    """The verifier of peers' cards that ``settings`` configure; None when the policy is off."""
    from cleveragents.a2a.card_keys import references

    if settings.card_signature_policy == "off":
        return None
    trusted = TrustedKeys.from_files(references(settings.card_trusted_keys), settings.card_trusted_jwks_url,
                                     settings.resolved_workspace)
    return CardVerifier(settings.card_signature_policy, trusted)
