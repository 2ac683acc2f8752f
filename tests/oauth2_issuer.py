"""An authorization server for the OAuth2 tests: signing keys the test makes, a JWKS
endpoint on real uvicorn (127.0.0.1) that counts its fetches, and access tokens minted
with those keys (or forged without them)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.contract.runners import UvicornServer

ISSUER = "https://issuer.test/"
AUDIENCE = "https://agents.test"
TOKEN_URL = "https://issuer.test/oauth/token"
ACCESS_TOKEN_TYPE = "at+jwt"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    def __init__(self) -> None:
        self.private: dict[str, tuple[Any, str]] = {}  # kid -> (private key, algorithm)
        self.published: list[str] = []
        self.fetches = 0
        self.mode = "ok"  # "ok", "down" (500), "stall" (never answers), "huge" (an endless body)
        self.server: UvicornServer | None = None

    # -- keys -------------------------------------------------------------------------
    def add_key(self, kid: str, algorithm: str, publish: bool = True) -> None:
        if algorithm.startswith(("RS", "PS")):
            key: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif algorithm == "ES256":
            key = ec.generate_private_key(ec.SECP256R1())
        elif algorithm == "ES384":
            key = ec.generate_private_key(ec.SECP384R1())
        elif algorithm == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
        else:
            raise ValueError(algorithm)
        self.private[kid] = (key, algorithm)
        if publish:
            self.published.append(kid)

    def public_jwk(self, kid: str, with_alg: bool = True) -> dict[str, Any]:
        key, algorithm = self.private[kid]
        codec = {"R": RSAAlgorithm, "P": RSAAlgorithm, "E": ECAlgorithm}.get(algorithm[0], OKPAlgorithm)
        jwk = codec.to_jwk(key.public_key(), as_dict=True)
        jwk.update(kid=kid, use="sig")
        if with_alg:
            jwk["alg"] = algorithm
        return jwk

    def public_pem(self, kid: str) -> bytes:
        return self.private[kid][0].public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.public_jwk(kid) for kid in self.published]}

    # -- tokens -----------------------------------------------------------------------
    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "client-7", "iat": now, "exp": now + 600,
                                  "scope": "agents:read agents:send"}
        claims.update(changes)
        return {k: v for k, v in claims.items() if v is not None}

    def mint(self, kid: str = "rsa-1", *, headers: dict[str, Any] | None = None, **changes: Any) -> str:
        """An access token (``typ: at+jwt``, RFC 9068); ``headers`` change its header
        (a ``typ`` of ``None`` leaves it out)."""
        key, algorithm = self.private[kid]
        header = {"kid": kid, "typ": ACCESS_TOKEN_TYPE, **(headers or {})}  # PyJWT drops a typ of None
        return jwt.encode(self.claims(**changes), key, algorithm=algorithm, headers=header)

    def forge(self, header: dict[str, Any], claims: dict[str, Any], secret: bytes | None = None) -> str:
        """A token built by hand: ``alg: none`` (no signature), or HS256 keyed with ``secret``."""
        signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
        signature = b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()) if secret else ""
        return signing_input + "." + signature

    # -- the JWKS endpoint ----------------------------------------------------------------
    async def _jwks(self, request: Request) -> Response:
        self.fetches += 1
        if self.mode == "down":
            return Response("down", status_code=500)
        if self.mode == "stall":
            await asyncio.sleep(3600)
        if self.mode == "huge":
            from starlette.responses import StreamingResponse

            async def endless():
                yield b'{"keys": ['
                while True:
                    yield b" " * 65536
                    await asyncio.sleep(0)

            return StreamingResponse(endless(), media_type="application/json")
        return JSONResponse(self.jwks())

    async def start(self) -> str:
        self.server = UvicornServer(Starlette(routes=[Route("/jwks.json", self._jwks)]))
        await self.server.start()
        return self.jwks_url

    @property
    def jwks_url(self) -> str:
        assert self.server is not None
        return self.server.url + "/jwks.json"

    async def stop(self) -> None:
        if self.server is not None:
            self.mode = "ok"
            await self.server.stop()


@contextlib.asynccontextmanager
async def running_issuer() -> AsyncIterator[Issuer]:
    """An authorization server on loopback with an RS256 key (``rsa-1``) and an ES256
    one (``ec-1``): the ``issuer`` fixture (tests/conftest.py)."""
    issuer = Issuer()
    issuer.add_key("rsa-1", "RS256")
    issuer.add_key("ec-1", "ES256")
    await issuer.start()
    try:
        yield issuer
    finally:
        await issuer.stop()
