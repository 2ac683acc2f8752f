"""An authorization server's signing keys (a JWK Set), from a URL or a file.

The set is read when first needed and kept ``max_age`` seconds. A token naming a
key the set lacks (``kid``) makes it read again, so a rotated key is picked up at
once, but at most once every ``REFETCH_SECONDS``: tokens with made-up key ids can't
make the server hammer the authorization server. A fetch never blocks the event
loop, is bounded in time and size, and concurrent requests share one. When a fetch
fails, the keys read before stay in use (logged), and the next try waits
``REFETCH_SECONDS``.

Only signing keys that can verify are kept: ``use`` other than ``sig``, ``key_ops``
without ``verify``, and symmetric (``oct``) keys are left out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleveragents.config import JWT_ALGORITHMS
from cleveragents.http_clients import tls_context

logger = logging.getLogger("cleveragents.http.oauth")

MAX_JWKS_BYTES = 256 * 1024
MAX_KEYS = 64
FETCH_TIMEOUT = 5.0  # seconds for a whole fetch: connect, headers and body
REFETCH_SECONDS = 10.0
# The algorithms each key type (and curve) can verify, when the key names none.
_BY_TYPE = {"RSA": ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")}
_BY_CURVE = {"P-256": ("ES256",), "P-384": ("ES384",), "P-521": ("ES512",), "Ed25519": ("EdDSA",),
             "Ed448": ("EdDSA",)}


class KeySetUnavailable(Exception):
    """The key set could not be read (and none was read before); the message says why."""


@dataclass(slots=True)
class SigningKey:
    jwk: dict[str, Any]
    kid: str | None
    algorithms: frozenset[str]
    _verifiers: dict[str, Any] = field(default_factory=dict)

    def verifier(self, algorithm: str) -> Any:
        """The key as PyJWT's ``PyJWK``, bound to ``algorithm`` (made once)."""
        found = self._verifiers.get(algorithm)
        if found is None:
            from jwt import PyJWK

            found = self._verifiers[algorithm] = PyJWK(self.jwk, algorithm=algorithm)
        return found


def signing_keys(document: Any, where: str) -> list[SigningKey]:
    """The usable keys of a JWKS document; ``KeySetUnavailable`` if it is not one."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeySetUnavailable(f"{where} is not a JWK Set (an object with a `keys` list)")
    if len(document["keys"]) > MAX_KEYS:
        raise KeySetUnavailable(f"{where} has more than {MAX_KEYS} keys")
    found = []
    for jwk in document["keys"]:
        if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
            continue
        ops = jwk.get("key_ops")
        if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
            continue
        kid = jwk.get("kid")
        if kid is not None and not isinstance(kid, str):
            continue
        algorithms = _algorithms_of(jwk)
        if algorithms:
            found.append(SigningKey(jwk, kid, algorithms))
    return found


def _algorithms_of(jwk: dict[str, Any]) -> frozenset[str]:
    named = jwk.get("alg")
    if named is not None:
        return frozenset({named}) if named in JWT_ALGORITHMS and _fits(jwk, named) else frozenset()
    if jwk.get("kty") == "RSA":
        return frozenset(_BY_TYPE["RSA"])
    if jwk.get("kty") in ("EC", "OKP"):
        return frozenset(_BY_CURVE.get(str(jwk.get("crv")), ()))
    return frozenset()  # oct (a shared secret) and anything unknown


def _fits(jwk: dict[str, Any], algorithm: str) -> bool:
    """Whether a key's type allows the algorithm it names (an RSA key naming ES256 does not)."""
    if jwk.get("kty") == "RSA":
        return algorithm in _BY_TYPE["RSA"]
    return algorithm in _BY_CURVE.get(str(jwk.get("crv")), ())


class KeySet:
    def __init__(self, *, url: str | None = None, path: Path | None = None, max_age: float = 300.0,
                 clock: Callable[[], float] = time.monotonic):
        if (url is None) == (path is None):
            raise ValueError("a key set is read from a URL or a file")
        self.url, self.path, self.max_age, self.clock = url, path, max_age, clock
        self.where = url or str(path)
        self._keys: list[SigningKey] | None = None
        self._read_at = float("-inf")  # when the keys in use were read
        self._tried_at = float("-inf")  # when a read was last tried
        self._lock: asyncio.Lock | None = None
        if path is not None:
            self._keys = signing_keys(_parse(_read_file(path), self.where), self.where)  # a bad file fails at once
            self._read_at = self._tried_at = clock()

    async def candidates(self, kid: str | None) -> list[SigningKey]:
        """The keys that may have signed a token naming ``kid`` (every key when it names
        none); read the set again first when it is old, or lacks ``kid`` and may now
        have it. ``KeySetUnavailable`` when no set could be read at all."""
        now = self.clock()
        if self._keys is None or now - self._read_at > self.max_age:
            await self._refresh(now)
        elif kid is not None and not _matching(self._keys, kid) and now - self._tried_at >= REFETCH_SECONDS:
            await self._refresh(now)
        if self._keys is None:
            raise KeySetUnavailable(f"the signing keys at {self.where} could not be read")
        return _matching(self._keys, kid)

    async def _refresh(self, asked_at: float) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            # Another request read it while this one waited, or a read was tried a moment
            # ago (and failed, or lacked the key): don't read it at every request.
            if self._tried_at >= asked_at or self.clock() - self._tried_at < REFETCH_SECONDS:
                return
            self._tried_at = self.clock()
            try:
                if self.url is not None:
                    raw = await asyncio.wait_for(_fetch(self.url), FETCH_TIMEOUT)
                else:
                    assert self.path is not None
                    raw = await asyncio.to_thread(_read_file, self.path)
                keys = signing_keys(_parse(raw, self.where), self.where)
            except asyncio.TimeoutError:
                logger.warning("reading the signing keys at %s timed out after %ss", self.where, FETCH_TIMEOUT)
                return
            except KeySetUnavailable as exc:
                logger.warning("%s", exc)
                return
            self._keys, self._read_at = keys, self.clock()


def _matching(keys: list[SigningKey], kid: str | None) -> list[SigningKey]:
    return list(keys) if kid is None else [key for key in keys if key.kid == kid]


def _parse(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise KeySetUnavailable(f"{where} is not JSON") from None


def _read_file(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_JWKS_BYTES + 1)
    except OSError as exc:
        raise KeySetUnavailable(f"the key set file {path} can't be read: {exc.strerror}") from None
    if len(raw) > MAX_JWKS_BYTES:
        raise KeySetUnavailable(f"the key set file {path} is larger than {MAX_JWKS_BYTES} bytes")
    return raw


async def _fetch(url: str) -> bytes:
    """The body of ``url`` (a 200, no redirects), at most ``MAX_JWKS_BYTES``."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False,
                                     verify=tls_context()) as client:
            async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    raise KeySetUnavailable(f"the key set at {url} answered {response.status_code}, not 200")
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_JWKS_BYTES:
                        raise KeySetUnavailable(f"the key set at {url} is larger than {MAX_JWKS_BYTES} bytes")
                    chunks.append(chunk)
                return b"".join(chunks)
    except httpx.HTTPError as exc:
        raise KeySetUnavailable(f"the key set at {url} could not be fetched: {type(exc).__name__}: {exc}") from None
