"""OAuth2 access tokens on real uvicorn (127.0.0.1), against a JWKS endpoint on loopback
that the test runs, with tokens the test mints: what gets in, what is refused (401
with ``WWW-Authenticate``, or 403 naming the scopes that would do), and how the key
set is fetched (rotation picked up, bounded in time, size and rate)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import httpx
import pytest

from cleveragents import A2A, Agent, OAuth2
from cleveragents.transports.http import jwks
from tests.contract.runners import UvicornServer
from tests.oauth2_issuer import AUDIENCE, ISSUER, TOKEN_URL, Issuer

V1 = {"A2A-Version": "1.0"}
STATIC_TOKEN = "static-token-5e7b1c"
SCOPES = {"agents:read": ["read"], "agents:send": ["read", "send"], "agents:admin": ["*"]}


def rpc(method: str, params: dict | None = None, msg_id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


SEND = rpc("SendMessage", {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]}})


def oauth2_for(issuer: Issuer, **changes) -> OAuth2:
    return OAuth2(**{"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": issuer.jwks_url, "token_url": TOKEN_URL,
                     "scopes": SCOPES, **changes})


@pytest.fixture
async def agent(issuer, tmp_path):
    """The echo agent behind OAuth2 and a static token; yields an httpx client to it."""
    a2a = A2A(agent=Agent(name="Echo", handler=lambda text: f"echo: {text}"), auth_token=STATIC_TOKEN,
              oauth2=oauth2_for(issuer))
    server = UvicornServer(a2a.asgi_app(workspace=tmp_path, memory=True))
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
        yield client
    await server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **V1}


def reason_of(body: dict) -> tuple[str, dict]:
    """The ErrorInfo reason and metadata of a 1.0 JSON-RPC error."""
    (info,) = [d for d in body["error"]["data"] if "reason" in d]
    return info["reason"], info["metadata"]


async def refused(client: httpx.AsyncClient, token: str, expected_reason: str) -> httpx.Response:
    answer = await client.post("/a2a", json=SEND, headers=bearer(token))
    assert answer.status_code == 401, answer.text
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="a2a", error="invalid_token", error_description="'), challenge
    reason, metadata = reason_of(answer.json())
    assert reason == "UNAUTHENTICATED" and metadata["reason"] == expected_reason, metadata
    assert '"oauth2"' in metadata["schemes"]
    assert answer.json()["id"] == 1 and "result" not in answer.json()
    return answer


async def test_valid_rs256_and_es256_tokens_get_in(agent, issuer):
    for kid in ("rsa-1", "ec-1"):
        answer = await agent.post("/a2a", json=SEND, headers=bearer(issuer.mint(kid)))
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert issuer.fetches == 1  # one fetch served both keys


async def test_a_key_without_alg_allows_the_algorithms_of_its_type(tmp_path, issuer):
    issuer.add_key("ps-1", "PS256")
    issuer.jwks = lambda: {"keys": [issuer.public_jwk("ps-1", with_alg=False)]}  # type: ignore[method-assign]
    server = UvicornServer(A2A(agent=Agent(name="Echo", handler=lambda t: t), oauth2=oauth2_for(issuer)).asgi_app(
        workspace=tmp_path, memory=True))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
            assert (await client.post("/a2a", json=SEND, headers=bearer(issuer.mint("ps-1")))).status_code == 200
            forged_es = issuer.mint("ec-1", headers={"kid": "ps-1"})  # an EC signature under the RSA key's id
            await refused(client, forged_es, "algorithm_not_allowed")
    finally:
        await server.stop()


async def test_expired_wrong_issuer_wrong_audience_and_missing_claims_are_refused(agent, issuer):
    long_ago = int(time.time()) - 3600
    await refused(agent, issuer.mint(exp=long_ago, iat=long_ago - 600), "expired")
    await refused(agent, issuer.mint(iss="https://elsewhere.test/"), "wrong_issuer")
    await refused(agent, issuer.mint(aud="https://another-api.test"), "wrong_audience")
    await refused(agent, issuer.mint(exp=None), "missing_claim")
    await refused(agent, issuer.mint(aud=None), "missing_claim")
    await refused(agent, issuer.mint(nbf=int(time.time()) + 3600), "not_yet_valid")
    # A token for several audiences, ours among them, is fine.
    assert (await agent.post("/a2a", json=SEND, headers=bearer(issuer.mint(aud=["x", AUDIENCE])))).status_code == 200


async def test_only_tokens_typed_as_access_tokens_get_in(agent, issuer, tmp_path):
    """RFC 9068: ``at+jwt`` (in any case, with or without ``application/``) gets in; an
    ID token's ``JWT``, no ``typ`` or another JWT type does not, unless the server
    accepts plain JWTs, which still refuses other types."""
    for typ in ("at+jwt", "AT+JWT", "application/at+jwt"):
        answer = await agent.post("/a2a", json=SEND, headers=bearer(issuer.mint(headers={"typ": typ})))
        assert answer.status_code == 200, (typ, answer.text)
    for typ in ("JWT", None, "logout+jwt", "dpop+jwt"):
        answer = await refused(agent, issuer.mint(headers={"typ": typ}), "wrong_token_type")
        assert "at+jwt" in answer.json()["error"]["message"]
    lenient = UvicornServer(A2A(agent=Agent(name="Echo", handler=lambda t: t),
                                oauth2=oauth2_for(issuer, accept_plain_jwt=True)).asgi_app(workspace=tmp_path,
                                                                                           memory=True))
    await lenient.start()
    try:
        async with httpx.AsyncClient(base_url=lenient.url, timeout=20) as client:
            for typ in ("at+jwt", "JWT", "jwt", "application/jwt", None):
                answer = await client.post("/a2a", json=SEND, headers=bearer(issuer.mint(headers={"typ": typ})))
                assert answer.status_code == 200, (typ, answer.text)
            await refused(client, issuer.mint(headers={"typ": "logout+jwt"}), "wrong_token_type")
    finally:
        await lenient.stop()


async def test_a_tampered_or_garbled_token_is_refused(agent, issuer):
    token = issuer.mint()
    head, payload, signature = token.split(".")
    other = issuer.mint(sub="someone-else").split(".")[1]
    await refused(agent, f"{head}.{other}.{signature}", "bad_signature")
    await refused(agent, f"{head}.{payload}.{signature[:-4]}AAAA", "bad_signature")
    await refused(agent, "not-a-jwt", "malformed")
    await refused(agent, "a.b.c", "malformed")


async def test_alg_none_and_hs256_keyed_with_the_public_key_are_refused(agent, issuer):
    claims = issuer.claims()
    await refused(agent, issuer.forge({"alg": "none", "kid": "rsa-1"}, claims), "algorithm_not_allowed")
    await refused(agent, issuer.forge({"alg": "None", "typ": "JWT"}, claims), "algorithm_not_allowed")
    for secret in (issuer.public_pem("rsa-1"), issuer.public_pem("rsa-1").strip()):  # algorithm confusion
        forged = issuer.forge({"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}, claims, secret)
        answer = await refused(agent, forged, "algorithm_not_allowed")
        assert "HS256" in answer.json()["error"]["message"]
    # A key that names RS256 doesn't verify an RS512 token made with it either.
    rs512 = issuer.forge({"alg": "RS512", "kid": "rsa-1", "typ": "at+jwt"}, claims, None)
    await refused(agent, rs512, "algorithm_not_allowed")


async def test_an_unknown_key_is_refused_then_picked_up_once_the_issuer_publishes_it(agent, issuer, monkeypatch):
    monkeypatch.setattr(jwks, "REFETCH_SECONDS", 0.5)
    assert (await agent.post("/a2a", json=SEND, headers=bearer(issuer.mint()))).status_code == 200
    issuer.add_key("rsa-2", "RS256", publish=False)
    rotated = issuer.mint("rsa-2")
    await asyncio.sleep(0.6)
    answer = await refused(agent, rotated, "unknown_key")
    assert "rsa-2" in answer.json()["error"]["message"]
    assert issuer.fetches == 2  # the unknown key made it look again
    issuer.published = ["rsa-2"]  # rotation: the new key in, the old one out
    await asyncio.sleep(0.6)
    assert (await agent.post("/a2a", json=SEND, headers=bearer(rotated))).status_code == 200
    assert issuer.fetches == 3
    await refused(agent, issuer.mint("rsa-1"), "unknown_key")  # the retired key no longer gets in


async def test_made_up_key_ids_do_not_hammer_the_issuer(agent, issuer):
    assert (await agent.post("/a2a", json=SEND, headers=bearer(issuer.mint()))).status_code == 200
    for n in range(20):
        await refused(agent, issuer.mint(headers={"kid": f"made-up-{n}"}), "unknown_key")
    assert issuer.fetches <= 2


async def test_scopes_grant_groups_of_methods(agent, issuer):
    reader = bearer(issuer.mint(scope="agents:read"))
    sender = bearer(issuer.mint(scope="agents:send"))
    nobody = bearer(issuer.mint(scope="profile email"))
    sent = await agent.post("/a2a", json=SEND, headers=sender)
    assert sent.status_code == 200
    task_id = sent.json()["result"]["task"]["id"]
    # read: get and list, over JSON-RPC in both dialects and over REST.
    got = await agent.post("/a2a", json=rpc("GetTask", {"id": task_id}), headers=reader)
    assert got.status_code == 200 and got.json()["result"]["id"] == task_id
    assert (await agent.post("/a2a", json=rpc("tasks/get", {"id": task_id}), headers=reader)).status_code == 200
    assert (await agent.get(f"/tasks/{task_id}", headers=reader)).status_code == 200
    # ... but not send, in any spelling.
    for body in (SEND, {**SEND, "method": "message/send"}):
        denied = await agent.post("/a2a", json=body, headers=reader)
        assert denied.status_code == 403, denied.text
        assert denied.headers["www-authenticate"] == \
            'Bearer realm="a2a", error="insufficient_scope", scope="agents:send agents:admin"'
    denied = await agent.post("/a2a", json=SEND, headers=reader)
    reason, metadata = reason_of(denied.json())
    assert reason == "PERMISSION_DENIED" and denied.json()["error"]["code"] == -32600
    assert metadata["method"] == "SendMessage" and metadata["required_scopes"] == '["agents:send","agents:admin"]'
    assert metadata["granted_scopes"] == '["agents:read"]'
    assert "agents:send" in denied.json()["error"]["message"]
    rest = await agent.post("/message:send", json={"message": SEND["params"]["message"]}, headers=reader)
    assert rest.status_code == 403 and rest.json()["error"]["status"] == "PERMISSION_DENIED"
    # Extension methods: admin only for applying a plan; the read group lists tools.
    listed = await agent.post("/a2a", json=rpc("_cleveragents/registry/tool/list"), headers=reader)
    assert listed.status_code == 200 and "result" in listed.json()
    apply = await agent.post("/a2a", json=rpc("_cleveragents/plan/apply", {"plan_id": "x"}), headers=sender)
    assert apply.status_code == 403
    assert apply.json()["error"]["code"] == -32003
    assert apply.json()["error"]["data"]["required_scopes"] == ["agents:admin"]
    admin = await agent.post("/a2a", json=rpc("_cleveragents/plan/apply", {"plan_id": "x"}),
                             headers=bearer(issuer.mint(scope="agents:admin")))
    assert admin.status_code == 200 and admin.json()["error"]["code"] != -32003  # in; no such plan
    # A token without any of our scopes gets nothing, events included.
    assert (await agent.post("/a2a", json=rpc("ListTasks"), headers=nobody)).status_code == 403
    events = await agent.get("/events", headers=nobody)
    assert events.status_code == 403 and events.json()["error"]["data"]["required_scopes"] == [
        "agents:read", "agents:send", "agents:admin"]


async def test_scp_lists_count_as_scopes(agent, issuer):
    token = issuer.mint(scope=None, scp=["agents:send"])
    assert (await agent.post("/a2a", json=SEND, headers=bearer(token))).status_code == 200


async def test_the_static_token_and_the_missing_credential_still_work(agent):
    assert (await agent.post("/a2a", json=SEND, headers=bearer(STATIC_TOKEN))).status_code == 200
    apply = await agent.post("/a2a", json=rpc("_cleveragents/plan/apply", {"plan_id": "x"}),
                             headers=bearer(STATIC_TOKEN))
    assert apply.json()["error"]["code"] != -32003  # a configured secret may call every method
    missing = await agent.post("/a2a", json=SEND, headers=V1)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == 'Bearer realm="a2a"'
    assert reason_of(missing.json())[1]["schemes"] == '["bearerAuth","oauth2"]'


async def test_an_unreachable_key_set_is_a_503_that_does_not_stall(tmp_path, issuer, monkeypatch):
    monkeypatch.setattr(jwks, "FETCH_TIMEOUT", 1.0)
    for mode in ("down", "stall", "huge"):
        issuer.mode = mode
        server = UvicornServer(A2A(agent=Agent(name="Echo", handler=lambda t: t), oauth2=oauth2_for(issuer))
                               .asgi_app(workspace=tmp_path, memory=True))
        await server.start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
                started = time.monotonic()
                answer = await client.post("/a2a", json=SEND, headers=bearer(issuer.mint()))
                assert time.monotonic() - started < 5, mode
                assert answer.status_code == 503 and answer.headers["retry-after"], (mode, answer.text)
                assert reason_of(answer.json())[1]["reason"] == "keys_unavailable"
                assert issuer.jwks_url.split("/")[2] not in answer.text  # where the keys are stays in the log
                rest = await client.get("/tasks", headers=bearer(issuer.mint()))
                assert rest.status_code == 503 and rest.json()["error"]["status"] == "UNAVAILABLE"
                assert (await client.get("/healthz")).status_code == 200  # the server itself is fine
        finally:
            await server.stop()


async def test_the_config_files_oauth2_with_a_jwks_file_serves_the_backend(tmp_path, issuer, monkeypatch):
    """``[oauth2]`` in the workspace's configuration file, keys in a file next to it:
    the backend's card declares the scheme, tokens get in, and a rewritten file (a
    rotated key) is read again."""
    import json

    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(jwks, "REFETCH_SECONDS", 0.2)
    (tmp_path / ".cleveragents").mkdir()
    (tmp_path / "jwks.json").write_text(json.dumps(issuer.jwks()))
    (tmp_path / ".cleveragents" / "config.toml").write_text(f'''
[oauth2]
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
jwks_file = "jwks.json"
token_url = "{TOKEN_URL}"

[oauth2.scopes]
"agents:read" = ["read"]
''')
    server = UvicornServer(build_app(settings=Settings(workspace=tmp_path, memory=True)))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
            card = (await client.get("/.well-known/agent-card.json")).json()
            assert card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["flows"]["clientCredentials"][
                "tokenUrl"] == TOKEN_URL
            reader = bearer(issuer.mint(scope="agents:read"))
            assert (await client.post("/a2a", json=rpc("ListTasks"), headers=reader)).status_code == 200
            assert (await client.post("/a2a", json=SEND, headers=reader)).status_code == 403
            issuer.add_key("rsa-2", "RS256")
            rotated = issuer.mint("rsa-2", scope="agents:read")
            (tmp_path / "jwks.json").write_text(json.dumps(issuer.jwks()))
            await asyncio.sleep(0.3)
            assert (await client.post("/a2a", json=rpc("ListTasks"), headers=bearer(rotated))).status_code == 200
            # No random token is made for a server that has OAuth2.
            from cleveragents.transports.http.credentials import credentials_for_serving

            assert credentials_for_serving(Settings(workspace=tmp_path), "127.0.0.1")[1] is None
    finally:
        await server.stop()


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")})


def test_pyjwt_loads_only_when_oauth2_is_configured(tmp_path):
    code = f'''
import sys
from cleveragents import A2A, Agent, OAuth2
from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app
build_app(settings=Settings(workspace={str(tmp_path)!r}, memory=True, auth_tokens=("t",)))
A2A(agent=Agent(name="E", handler=lambda t: t), auth_token="t").asgi_app(workspace={str(tmp_path)!r}, memory=True)
assert "jwt" not in sys.modules and "cryptography" not in sys.modules, "loaded without OAuth2"
oauth2 = OAuth2(issuer="i", audience="a", jwks_url="https://i.example/k", token_url="https://i.example/t")
A2A(agent=Agent(name="E", handler=lambda t: t), oauth2=oauth2).asgi_app(workspace={str(tmp_path)!r}, memory=True)
assert "jwt" in sys.modules
'''
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr


def test_without_pyjwt_serving_oauth2_says_what_to_install(tmp_path):
    (tmp_path / ".cleveragents").mkdir()
    (tmp_path / ".cleveragents" / "config.toml").write_text(
        '[oauth2]\nissuer = "i"\naudience = "a"\njwks_url = "https://i.example/k"\ntoken_url = "https://i.example/t"\n')
    code = f'''
import sys
sys.modules["jwt"] = None  # as if PyJWT were not installed
from cleveragents.cli.main import main
sys.exit(main(["serve", "--http", "--port", "0", "--workspace", {str(tmp_path)!r}, "--memory"]))
'''
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")},
                               "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("agents serve: OAuth2 is configured, but PyJWT with its crypto "
                                                    "extra is not installed: pip install 'cleveragents[oauth]' "
                                                    "(PyJWT with its crypto extra)")
    assert "token:" not in done.stderr  # no token was made for the run: OAuth2 is the credential


async def test_concurrent_first_calls_share_one_fetch(agent, issuer):
    tokens = [issuer.mint("rsa-1" if n % 2 else "ec-1", sub=f"client-{n}") for n in range(20)]
    answers = await asyncio.gather(*(agent.post("/a2a", json=rpc("ListTasks"), headers=bearer(t)) for t in tokens))
    assert [a.status_code for a in answers] == [200] * 20
    assert issuer.fetches == 1


async def test_a_stalled_key_fetch_does_not_stall_the_server(tmp_path, issuer):
    issuer.mode = "stall"
    server = UvicornServer(A2A(agent=Agent(name="Echo", handler=lambda t: t), auth_token=STATIC_TOKEN,
                               oauth2=oauth2_for(issuer)).asgi_app(workspace=tmp_path, memory=True))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
            waiting = asyncio.ensure_future(client.post("/a2a", json=SEND, headers=bearer(issuer.mint())))
            while issuer.fetches == 0:
                await asyncio.sleep(0.01)
            # While that call waits for the keys, the server answers others at once.
            for _ in range(5):
                started = time.monotonic()
                assert (await client.post("/a2a", json=rpc("ListTasks"), headers=bearer(STATIC_TOKEN))).status_code == 200
                assert time.monotonic() - started < 1.0
            assert not waiting.done()
            assert (await waiting).status_code == 503  # after the fetch's time limit
    finally:
        await server.stop()
