"""The 0.3 card at ``/.well-known/agent.json`` is signed too, for both kinds of reader,
and the public signing keys are served as a JWK Set at ``/.well-known/jwks.json``,
which each signature's ``jku`` names.

Real readers check it over real HTTP: the a2a-sdk 1.x verifier (which maps a 0.3 card
into the 1.0 schema first), the a2a-sdk 0.3 verifier in its own venv (which
canonicalizes the 0.3 fields), and our outbound verifier trusting the served JWK Set;
each fetching the keys from the ``jku``. A tampered card fails all three.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os

import httpx
import jwt
import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from cleveragents import A2A, Agent
from cleveragents.a2a.card_signing import CardVerifier, TrustedKeys
from tests.contract.runners import UvicornServer
from tests.e2e.sdk03 import sdk03  # noqa: F401 - the session fixture

TOKEN = "v03-signed-token-9a1e"
KID = "card-03"
RPC = {"jsonrpc": "2.0", "id": 1, "params": {}}

# Run by the 0.3 SDK's Python: read the card and its jku's keys, verify, print the outcome.
VERIFY_03 = '''
import json, sys
import httpx, jwt
from a2a.types import AgentCard
from a2a.utils.signing import create_signature_verifier

card_json, tampered = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def keys(kid, jku):
    document = httpx.get(jku, timeout=10).json()
    return jwt.PyJWK(next(k for k in document["keys"] if k["kid"] == kid)).key
verify = create_signature_verifier(keys, ["ES256"])
outcomes = []
for card in (card_json, tampered):
    try:
        verify(AgentCard.model_validate(card))
        outcomes.append("valid")
    except Exception as exc:
        outcomes.append(type(exc).__name__)
print(json.dumps(outcomes))
'''


@pytest.fixture
async def signed(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "card.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    a2a = A2A(agent=Agent(name="Signed", handler=lambda text: text), description="Échos, signés ✓",
              auth_token=TOKEN, signing_keys=f"{tmp_path / 'card.pem'}#{KID}")
    server = UvicornServer(a2a.asgi_app(workspace=tmp_path, memory=True))
    await server.start()
    yield server.url, key
    await server.stop()


def header_of(signature: dict) -> dict:
    return json.loads(jwt.utils.base64url_decode(signature["protected"]))


def sdk_verifier(documents: dict[str, dict]):
    """The 1.x SDK's verifier, its keys from the JWK Set each signature's jku names
    (fetched beforehand: this event loop serves them)."""
    def key_provider(kid, jku):
        return jwt.PyJWK(next(k for k in documents[jku]["keys"] if k["kid"] == kid)).key
    return create_signature_verifier(key_provider, ["ES256"])


async def test_the_03_card_verifies_for_1x_and_03_readers_with_keys_from_the_jku(signed, sdk03):  # noqa: F811
    url, key = signed
    async with httpx.AsyncClient(timeout=10) as http:
        card = (await http.get(url + "/.well-known/agent.json")).json()
        both = (await http.get(url + "/.well-known/agent-card.json")).json()
        assert card["protocolVersion"] == "0.3.0" and "supportedInterfaces" not in card  # the 0.3 shape
        jkus = {header_of(s)["jku"] for s in card["signatures"] + both["signatures"]}
        assert jkus == {url + "/.well-known/jwks.json"}
        assert {header_of(s)["kid"] for s in card["signatures"]} == {KID}
        answer = await http.get(url + "/.well-known/jwks.json")
        assert answer.status_code == 200 and answer.headers["cache-control"] == "public, max-age=300"
        documents = {url + "/.well-known/jwks.json": answer.json()}
        extended = (await http.post(url + "/a2a", json={**RPC, "method": "agent/getAuthenticatedExtendedCard"},
                                    headers={"Authorization": f"Bearer {TOKEN}"})).json()["result"]
    (published,) = documents[url + "/.well-known/jwks.json"]["keys"]
    assert published["kid"] == KID and published["alg"] == "ES256" and published["use"] == "sig"
    assert "d" not in published  # the public key only
    assert jwt.PyJWK(published).key.public_numbers() == key.public_key().public_numbers()

    verify = sdk_verifier(documents)
    for served in (card, both, extended):
        verify(parse_agent_card(copy.deepcopy(served)))  # raises unless a signature verifies
    tampered = {**card, "url": "https://attacker.example/a2a"}
    with pytest.raises(InvalidSignaturesError):
        verify(parse_agent_card(copy.deepcopy(tampered)))

    ours = CardVerifier("require", TrustedKeys(jwks_url=url + "/.well-known/jwks.json"))
    assert (await ours.verify(card)).ok and (await ours.verify(extended)).ok
    assert (await ours.verify(tampered)).status == "invalid"
    assert (await ours.verify({**card, "preferredTransport": "GRPC"})).status == "invalid"

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    process = await asyncio.create_subprocess_exec(
        str(sdk03), "-c", VERIFY_03, json.dumps(card), json.dumps(tampered), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    assert json.loads(out) == ["valid", "InvalidSignaturesError"]


async def test_without_signing_keys_there_is_no_key_set_and_no_signature(tmp_path):
    server = UvicornServer(A2A(agent=Agent(name="Plain", handler=lambda t: t), auth_token=TOKEN)
                           .asgi_app(workspace=tmp_path, memory=True))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            assert (await http.get("/.well-known/jwks.json")).status_code == 404
            assert "signatures" not in (await http.get("/.well-known/agent.json")).json()
    finally:
        await server.stop()


def test_a_configured_jku_is_kept(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "k.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    a2a = A2A(agent=Agent(name="Signed", handler=lambda t: t), signing_keys=f"{tmp_path / 'k.pem'}#k",
              signing_jku="https://keys.example/jwks.json")
    card = a2a.agent_card("0.3")
    assert {header_of(s)["jku"] for s in card["signatures"]} == {"https://keys.example/jwks.json"}
