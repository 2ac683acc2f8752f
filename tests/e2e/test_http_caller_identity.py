"""A published agent's handler learns who is calling from ``turn.caller``: the subject,
client and scopes of the OAuth2 access token that let the call in (the a2a-sdk client
sends it, over JSON-RPC and HTTP+JSON, sent and streamed), the scheme of a configured
secret, and nothing at all where no authentication guards the call (in process)."""

from __future__ import annotations

import json

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import ClientCallContext
from a2a.types import a2a_pb2 as pb

from cleveragents import A2A, Agent, CallerIdentity, OAuth2, Turn
from tests.contract.runners import UvicornServer
from tests.oauth2_issuer import AUDIENCE, ISSUER, TOKEN_URL

STATIC_TOKEN = "caller-static-token-77f0"
API_KEY = "caller-api-key-1c2d"
SESSION = "session-caller"


def whoami(text: str, turn: Turn) -> str:
    caller: CallerIdentity | None = turn.caller
    if caller is None:
        return json.dumps(None)
    shown = caller.to_dict()
    shown["claims"] = {k: shown["claims"][k] for k in ("sub", "tenant") if k in shown["claims"]}
    shown["may_send"] = caller.has_scope("agents:send")
    return json.dumps(shown)


@pytest.fixture
async def server(issuer, tmp_path):
    oauth2 = OAuth2(issuer=ISSUER, audience=AUDIENCE, jwks_url=issuer.jwks_url, token_url=TOKEN_URL,
                    scopes={"agents:read": ["read"], "agents:send": ["read", "send"]})
    a2a = A2A(agent=Agent(name="WhoAmI", handler=whoami), oauth2=oauth2, auth_token=STATIC_TOKEN)
    server = UvicornServer(a2a.asgi_app(workspace=tmp_path, memory=True, api_keys=(API_KEY,)))
    await server.start()
    yield server
    await server.stop()


def reply_of(task: pb.Task) -> object:
    return json.loads("".join(p.text for a in task.artifacts for p in a.parts))


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_handler_sees_the_access_tokens_subject_client_and_scopes(server, issuer, binding, streaming):
    token = issuer.mint(sub="user-42", client_id="editor-app", scope="agents:send", tenant="acme")
    async with httpx.AsyncClient(timeout=20) as http:
        card = parse_agent_card((await http.get(server.url + "/.well-known/agent-card.json")).json())
        store = InMemoryContextCredentialStore()
        await store.set_credentials(SESSION, "oauth2", token)
        config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding], streaming=streaming)
        client = ClientFactory(config).create(card, interceptors=[AuthInterceptor(store)])
        request = pb.SendMessageRequest(message=pb.Message(message_id="m-1", role=pb.Role.ROLE_USER,
                                                           parts=[pb.Part(text="who am I?")]))
        events = [e async for e in client.send_message(request, context=ClientCallContext(state={"sessionId": SESSION}))]
    task = events[-1].task if events[-1].HasField("task") else None
    if task is None or not task.artifacts:  # a stream ends with an update: read the task the updates built
        artifacts = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
        task = pb.Task(artifacts=artifacts)
    assert reply_of(task) == {
        "scheme": "oauth2", "subject": "user-42", "client_id": "editor-app", "scopes": ["agents:send"],
        "issuer": ISSUER, "claims": {"sub": "user-42", "tenant": "acme"}, "may_send": True}


async def test_azp_names_the_client_when_client_id_is_missing(server, issuer):
    token = issuer.mint(sub="user-9", azp="cli-app", scope="agents:send agents:read")
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": "m-2", "parts": [{"text": "hi"}]}}}
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        answer = await http.post("/a2a", json=body, headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"})
    shown = json.loads(answer.json()["result"]["task"]["artifacts"][0]["parts"][0]["text"])
    assert (shown["client_id"], shown["subject"], shown["scopes"]) == ("cli-app", "user-9", ["agents:read", "agents:send"])


async def test_a_configured_secret_names_its_scheme_and_no_one(server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {"kind": "message", "role": "user", "messageId": "m-3",
                                   "parts": [{"kind": "text", "text": "hi"}]}}}
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        by_token = await http.post("/a2a", json=body, headers={"Authorization": f"Bearer {STATIC_TOKEN}"})
        by_key = await http.post("/a2a", json=body, headers={"X-API-Key": API_KEY})
    for answer, scheme in ((by_token, "bearerAuth"), (by_key, "apiKey")):
        shown = json.loads(answer.json()["result"]["artifacts"][0]["parts"][0]["text"])
        assert shown == {"scheme": scheme, "subject": None, "client_id": None, "scopes": [], "issuer": None,
                         "claims": {}, "may_send": False}


def test_without_authentication_there_is_no_caller():
    assert json.loads(Agent(name="WhoAmI", handler=whoami).start("who?")) is None


def plan_actor(text: str, turn: Turn) -> str:
    """A session's actor: a plan's edit step asks it, and it says for whom it edits."""
    return f"edited for {turn.caller.subject if turn.caller is not None else 'no one'}"


async def test_a_plan_steps_actor_sees_who_executed_the_plan(issuer, tmp_path):
    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app

    (tmp_path / "README.md").write_text("hello\n")
    oauth2 = OAuth2(issuer=ISSUER, audience=AUDIENCE, jwks_url=issuer.jwks_url, token_url=TOKEN_URL)
    server = UvicornServer(build_app(settings=Settings(workspace=tmp_path, memory=True, oauth2=oauth2)))
    await server.start()

    async def call(method: str, **params):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = await http.post("/a2a", json=body, headers={"Authorization": f"Bearer {token}"})
        assert "result" in answer.json(), answer.text
        return answer.json()["result"]

    token = issuer.mint(sub="planner-3")
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            session = await call("session.create", actor_name=f"python/{__name__}:plan_actor")
            plan = await call("_cleveragents/plan/use", action_name="edit", session_id=session["session_id"],
                              arguments={"instruction": "Add a title", "glob": "*.md"})
            await call("_cleveragents/plan/execute", plan_id=plan["plan_id"])
            tree = await call("_cleveragents/plan/tree", plan_id=plan["plan_id"])
    finally:
        await server.stop()
    assert tree["roots"][0]["tool"] == "actor.edit"
    assert tree["roots"][0]["summary"] == "edited for planner-3"
