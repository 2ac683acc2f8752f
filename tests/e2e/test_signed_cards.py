"""Signed agent cards (A2A 1.0 §8.4) against the official a2a-sdk, both ways.

Our cards, served over real HTTP (a published agent's and the backend's, public and
extended), verify with the SDK's ``create_signature_verifier``; a card that a stock
a2a-sdk server signs with the SDK's ``create_agent_card_signer`` verifies with our
outbound client's verifier. Then what must fail does: a tampered card, a wrong key,
an unknown kid, and the policies warn and require.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
import uvicorn
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import InvalidSignaturesError, create_agent_card_signer, create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from google.protobuf.struct_pb2 import Struct
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from cleveragents import A2A, Agent
from cleveragents.a2a.card_keys import load_trusted_keys, public_jwk
from cleveragents.a2a.card_signing import CardSignatureError, CardSigner, CardVerifier, TrustedKeys
from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
from cleveragents.domain.task import Task
from cleveragents.transports.http.app import build_app
from cleveragents.transports.http.auth import HttpAuth
from tests.contract.runners import UvicornServer
from tests.fakes.a2a_agent import Executor
from tests.listening import listening

TOKEN = "signed-cards-token-51aa"
ALGORITHMS = ["ES256", "ES384", "RS256", "EdDSA"]


# -- keys ---------------------------------------------------------------------------
def write_pem(path, key) -> str:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return str(path)


def write_jwk(path, key, kid: str) -> str:
    jwk = jwt.algorithms.OKPAlgorithm.to_jwk(key, as_dict=True) if isinstance(key, ed25519.Ed25519PrivateKey) \
        else jwt.algorithms.ECAlgorithm.to_jwk(key, as_dict=True)
    path.write_text(json.dumps({**jwk, "kid": kid}))
    return str(path)


def public_pem(path, key) -> str:
    path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    return str(path)


KEYS = {
    "ec-pem": lambda: ec.generate_private_key(ec.SECP256R1()),
    "rsa-pem": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "ed25519-jwk": ed25519.Ed25519PrivateKey.generate,
}


def parse(card: dict) -> pb.AgentCard:
    """The SDK's reading of a card (it changes the dict it reads: a copy)."""
    from a2a.client.card_resolver import parse_agent_card

    return parse_agent_card(copy.deepcopy(card))


def sdk_verifier(trusted: dict[str, object]):
    """The SDK's verifier, trusting ``{kid: public key}``."""
    def key_provider(kid, jku):
        if kid not in trusted:
            raise jwt.PyJWKError(f"unknown kid {kid}")
        return trusted[kid]
    return create_signature_verifier(key_provider, ALGORITHMS)


def echo_agent(**options) -> A2A:
    async def handler(text: str):
        yield f"echo: {text}"
    return A2A(agent=Agent(name="Signed", handler=handler), description="Echoes, with a signed card",
               auth_token=TOKEN, **options)


async def get_card(url: str, path: str = "/.well-known/agent-card.json") -> dict:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(url + path)
        assert response.status_code == 200
        return response.json()


async def extended_card(url: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}) as http:
        response = await http.post(url + "/a2a", json=body)
    return response.json()["result"]


# -- ours, verified by the SDK ------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KEYS))
async def test_the_sdk_verifies_a_published_agents_signed_cards(tmp_path, kind):
    key = KEYS[kind]()
    ref = write_jwk(tmp_path / "k.jwk", key, "jwk-1") if kind.endswith("jwk") else write_pem(tmp_path / "k.pem", key)
    agent = echo_agent(signing_keys=ref + ("" if kind.endswith("jwk") else "#card-2026"),
                       signing_jku="https://keys.example/jwks.json")
    kid = "jwk-1" if kind.endswith("jwk") else "card-2026"
    async with UvicornServer(agent.asgi_app(workspace=tmp_path, memory=True)) as url:
        card = await get_card(url)
        header = json.loads(jwt.utils.base64url_decode(card["signatures"][0]["protected"]))
        assert header["kid"] == kid and header["jku"] == "https://keys.example/jwks.json"
        assert header["alg"] == {"ec-pem": "ES256", "rsa-pem": "RS256", "ed25519-jwk": "EdDSA"}[kind]
        verify = sdk_verifier({kid: key.public_key()})
        verify(parse(card))  # raises when no signature verifies
        # The extended card (only an authenticated caller reads it) is signed as served.
        verify(parse(await extended_card(url)))
        # The same card, once served, is signed once: its ETag stays put.
        assert await get_card(url) == card


async def test_the_sdk_verifies_the_backends_card_signed_from_settings(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    write_pem(tmp_path / "card.pem", key)
    app = build_app(settings=_settings(tmp_path, card_signing_keys="card.pem"), auth=HttpAuth.of((TOKEN,), (), "X"))
    async with UvicornServer(app) as url:
        card = await get_card(url)
    kid = json.loads(jwt.utils.base64url_decode(card["signatures"][0]["protected"]))["kid"]
    # Without a kid in the reference, the kid is the key's RFC 7638 thumbprint.
    jwk = jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    members = json.dumps({m: jwk[m] for m in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    assert kid == jwt.utils.base64url_encode(hashlib.sha256(members.encode()).digest()).decode()
    sdk_verifier({kid: key.public_key()})(parse(card))


async def test_the_sdk_refuses_our_card_once_tampered_or_under_another_key(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    agent = echo_agent(signing_keys=write_pem(tmp_path / "k.pem", key) + "#k1")
    card = agent.agent_card()
    sdk_verifier({"k1": key.public_key()})(parse(card))
    with pytest.raises(InvalidSignaturesError):
        sdk_verifier({"k1": key.public_key()})(parse({**card, "description": "Wires money"}))
    with pytest.raises(InvalidSignaturesError):
        sdk_verifier({"k1": ec.generate_private_key(ec.SECP256R1()).public_key()})(parse(card))


async def test_two_keys_sign_during_a_rotation_and_each_verifies(tmp_path):
    old, new = ec.generate_private_key(ec.SECP256R1()), ed25519.Ed25519PrivateKey.generate()
    agent = echo_agent(signing_keys=[write_pem(tmp_path / "old.pem", old) + "#old", write_jwk(tmp_path / "n.jwk", new, "new")])
    card = agent.agent_card()
    assert len(card["signatures"]) == 2
    sdk_verifier({"old": old.public_key()})(parse(card))
    sdk_verifier({"new": new.public_key()})(parse(card))


# -- the SDK's, verified by ours ----------------------------------------------------
def _sdk_app(base: str, key, kid: str, jwks: dict) -> Starlette:
    params = Struct()
    params.update({"n": 1, "nested": {"list": ["a", ""], "flag": False}, "note": "é ✓"})
    card = pb.AgentCard(
        name="remote", description="A signed a2a-sdk agent ✓", version="1.0.0",
        supported_interfaces=[pb.AgentInterface(url=base + "/a2a", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=False, extensions=[
            pb.AgentExtension(uri="https://example.com/ext", description="x", required=False, params=params)]),
        security_schemes={"bearer": pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme="Bearer"))},
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="echo", name="Echo", description="Echo", tags=["t"])])
    sign = create_agent_card_signer(key, {"kid": kid, "alg": "ES256", "jku": None, "typ": "JOSE"})

    async def signed(card: pb.AgentCard) -> pb.AgentCard:
        copy = pb.AgentCard()
        copy.CopyFrom(card)
        return sign(copy)

    handler = DefaultRequestHandler(Executor(), InMemoryTaskStore(), card)
    jwks_route = Route("/jwks.json", lambda request: JSONResponse(jwks))
    return Starlette(routes=[*create_jsonrpc_routes(handler, "/a2a"), *create_agent_card_routes(card, signed), jwks_route])


@contextlib.contextmanager
def sdk_server(key, kid: str, jwks: dict | None = None) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(_sdk_app(base, key, kid, jwks or {"keys": []}), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the a2a-sdk server did not start"
        time.sleep(0.02)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def client(base: str, verifier: CardVerifier) -> A2AClient:
    return A2AClient(ServerConnectionConfig(url=base, token="t"), card_verifier=verifier)


def trusted(tmp_path, key, kid: str) -> TrustedKeys:
    return TrustedKeys(load_trusted_keys([public_pem(tmp_path / f"{kid}.pub.pem", key) + "#" + kid]))


async def test_our_client_verifies_a_card_the_sdk_signed_and_talks_to_it(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    with sdk_server(key, "sdk-1") as base:
        async with client(base, CardVerifier("require", trusted(tmp_path, key, "sdk-1"))) as remote:
            verdict = await remote.card_verifier.verify(await remote.card())
            assert verdict.ok and verdict.kid == "sdk-1"
            result = await remote.send("hello")
            assert isinstance(result, Task)


async def test_trusted_keys_from_a_jwks_url(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    signer_key = load_trusted_keys([public_pem(tmp_path / "p.pem", key) + "#sdk-2"])[0]
    jwks = {"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "sym"}, public_jwk(signer_key)]}
    with sdk_server(key, "sdk-2", jwks) as base:
        verifier = CardVerifier("require", TrustedKeys(jwks_url=base + "/jwks.json"))
        async with client(base, verifier) as remote:
            assert (await verifier.verify(await remote.card())).kid == "sdk-2"


async def test_require_refuses_a_card_under_another_key_or_an_unknown_kid(tmp_path):
    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    with sdk_server(key, "sdk-3") as base:
        with pytest.raises(CardSignatureError) as wrong:
            async with client(base, CardVerifier("require", trusted(tmp_path, other, "sdk-3"))):
                pass
        assert wrong.value.data["status"] == "invalid" and wrong.value.data["url"].startswith(base)
        with pytest.raises(CardSignatureError) as unknown:
            async with client(base, CardVerifier("require", trusted(tmp_path, key, "another-kid"))):
                pass
        assert unknown.value.data["status"] == "unknown_kid"


async def test_require_refuses_an_unsigned_card(tmp_path):
    from tests.fakes.a2a_agent import serving as unsigned_server

    key = ec.generate_private_key(ec.SECP256R1())
    with unsigned_server() as base:
        with pytest.raises(CardSignatureError) as refused:
            async with client(base, CardVerifier("require", trusted(tmp_path, key, "k"))):
                pass
    assert refused.value.data["status"] == "unsigned"


async def test_warn_logs_and_goes_on(tmp_path, caplog):
    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    with sdk_server(key, "sdk-4") as base, caplog.at_level(logging.WARNING, "cleveragents.a2a.card_signing"):
        async with client(base, CardVerifier("warn", trusted(tmp_path, other, "sdk-4"))) as remote:
            assert isinstance(await remote.send("hi"), Task)
    assert any("is not trusted" in r.getMessage() and "policy: warn" in r.getMessage() for r in caplog.records)


async def test_our_verifier_on_our_own_cards(tmp_path):
    key = ed25519.Ed25519PrivateKey.generate()
    signer = CardSigner.from_files([write_jwk(tmp_path / "k.jwk", key, "ours")])
    card = signer.sign(echo_agent().agent_card())
    verifier = CardVerifier("require", trusted(tmp_path, key, "ours"))
    assert (await verifier.verify(card)).ok
    tampered = {**card, "skills": [*card["skills"], {"id": "x", "name": "x", "description": "x", "tags": ["x"]}]}
    assert (await verifier.verify(tampered)).status == "invalid"
    assert (await verifier.verify({k: v for k, v in card.items() if k != "signatures"})).status == "unsigned"
    garbage = {**card, "signatures": [{"protected": "!!", "signature": "x"}, "no"]}
    assert (await verifier.verify(garbage)).status == "invalid"
    # Fields outside the 1.0 schema (the 0.3 ones a card carries for older clients) are not signed.
    assert (await verifier.verify({**card, "preferredTransport": "JSONRPC"})).ok


def _settings(tmp_path, **fields):
    from cleveragents.config import Settings

    return Settings(workspace=tmp_path, memory=True, **fields)


# -- over stdio -----------------------------------------------------------------------
STDIO_AGENT = '''
import sys
from cleveragents import A2A, Agent

a2a = A2A(agent=Agent(name="Signed", handler=lambda text: text), description="Signed over stdio",
          signing_keys=[sys.argv[1]], extended_agent_card_callback=lambda card: {**card, "description": "Extended"})
sys.exit(a2a.serve_stdio(memory=True))
'''


def test_the_sdk_verifies_the_cards_a_stdio_agent_gives(tmp_path):
    from tests.e2e.agent_server import AgentServer

    key = ec.generate_private_key(ec.SECP256R1())
    ref = write_pem(tmp_path / "k.pem", key) + "#stdio-1"
    (tmp_path / "agent.py").write_text(STDIO_AGENT)
    server = AgentServer(tmp_path / "agent.py", ref, cwd=tmp_path)
    try:
        verify = sdk_verifier({"stdio-1": key.public_key()})
        card = server.initialize_result()["capabilities"]["experimental"]["a2a"]["agentCard"]
        verify(parse(card))
        extended = server.result("GetExtendedAgentCard", {})
        assert extended["description"] == "Extended"  # the callback's change is what is signed
        verify(parse(extended))
        with pytest.raises(InvalidSignaturesError):
            verify(parse({**extended, "description": "Signed over stdio"}))
    finally:
        assert server.close() == 0


# -- the settings, end to end: `agents serve --http` signs, `agents --server` checks -----
def test_agents_serve_signs_and_agents_server_requires_a_trusted_signature(tmp_path):
    import os
    import subprocess
    import sys

    agents_cli = Path(sys.executable).with_name("agents")
    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    write_pem(tmp_path / "card.pem", key)
    public_pem(tmp_path / "card.pub.pem", key)
    public_pem(tmp_path / "other.pub.pem", other)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    serving_env = {**clean, "CLEVERAGENTS_CARD_SIGNING_KEYS": "card.pem#srv-1"}
    with listening([str(agents_cli), "serve", "--http", "--host", "127.0.0.1", "--port", "0", "--auth-token",
                    TOKEN, "--workspace", str(tmp_path), "--memory"], cwd=tmp_path, env=serving_env) as served:
        assert not served.before and served.url.startswith("http://127.0.0.1:"), served.stderr()
        url = served.url

        def health(trusted: str) -> subprocess.CompletedProcess[str]:
            env = {**clean, "CLEVERAGENTS_CARD_SIGNATURE_POLICY": "require",
                   "CLEVERAGENTS_CARD_TRUSTED_KEYS": str(tmp_path / trusted)}
            return subprocess.run([str(agents_cli), "health", "check", "--server", url, "--token", TOKEN],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)

        trusted = health("card.pub.pem#srv-1")
        assert trusted.returncode == 0, trusted.stderr
        refused = health("other.pub.pem#srv-1")
        assert refused.returncode != 0 and "not trusted" in refused.stderr, refused.stderr
