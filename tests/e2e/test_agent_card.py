"""The agent card as clients read it: what a publisher sets on it, the capabilities the
server holds to (a card without streaming or push notifications refuses those methods,
over stdio and over HTTP, in both A2A dialects), and the extended card, read with the
official a2a-sdk 1.x client from a real HTTP server."""

from __future__ import annotations

import json

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import PushNotificationNotSupportedError, UnsupportedOperationError

from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app
from cleveragents.transports.http.auth import HttpAuth
from cleveragents.transports.http.jsonrpc import MAX_BODY_BYTES
from tests.contract.runners import UvicornServer
from tests.e2e.agent_server import AgentServer
from tests.e2e.agents.card_agent import build

TOKEN = "card-token-5e1f"
EXTENSION = "urn:cleveragents:extensions:v1"
STREAMING_METHODS = {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe",
                     "tasks/subscribe"}
PUSH_METHODS = {"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
                "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"}
PUSH_V03 = {f"{prefix}pushNotificationConfig/{verb}" for prefix in ("tasks/", "")
            for verb in ("set", "get", "list", "delete")}
V1_MESSAGE = {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]}}
V03_MESSAGE = {"message": {"kind": "message", "role": "user", "messageId": "m-2",
                           "parts": [{"kind": "text", "text": "hi"}]}}
PUSH_V1 = {"taskId": "t-1", "url": "https://example.org/hook"}
PUSH_V03_PARAMS = {"taskId": "t-1", "pushNotificationConfig": {"url": "https://example.org/hook"}}

# (method, params, code, 1.0 ErrorInfo reason or None for the 0.3 dialect)
REFUSED = [
    ("SendStreamingMessage", V1_MESSAGE, -32004, "UNSUPPORTED_OPERATION"),
    ("SubscribeToTask", {"id": "t-1"}, -32004, "UNSUPPORTED_OPERATION"),
    ("message/stream", V03_MESSAGE, -32004, None),
    ("tasks/resubscribe", {"id": "t-1"}, -32004, None),
    ("CreateTaskPushNotificationConfig", PUSH_V1, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    ("ListTaskPushNotificationConfigs", {"taskId": "t-1"}, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    ("tasks/pushNotificationConfig/set", PUSH_V03_PARAMS, -32003, None),
    ("pushNotificationConfig/set", PUSH_V03_PARAMS, -32003, None),
    ("tasks/pushNotificationConfig/delete", {"id": "t-1", "pushNotificationConfigId": "p"}, -32003, None),
]


def check_refusal(error: dict, code: int, reason: str | None, method: str) -> None:
    assert error["code"] == code, error
    if reason is None:
        assert error["data"]["method"] == method, error
    else:
        assert error["data"][0]["reason"] == reason, error
        assert error["data"][0]["metadata"]["method"] == method, error


# -- stdio --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stdio(tmp_path_factory):
    server = AgentServer.agent("card_agent", "--memory", cwd=tmp_path_factory.mktemp("card"))
    yield server
    server.close()


def test_stdio_initialize_gives_the_card_and_leaves_out_what_it_turns_off(stdio):
    a2a = stdio.initialize_result()["capabilities"]["experimental"]["a2a"]
    card = a2a["agentCard"]
    assert card["provider"] == {"organization": "Example Org", "url": "https://example.org"}
    assert card["documentationUrl"] == "https://example.org/docs/quiet"
    assert (card["defaultInputModes"], card["defaultOutputModes"]) == (["text/plain"], ["text/plain", "application/json"])
    assert card["capabilities"]["streaming"] is False and card["capabilities"]["pushNotifications"] is False
    listed = set(a2a["methods"]["1.0"]) | set(a2a["methods"]["0.3"])
    assert not listed & (STREAMING_METHODS | PUSH_METHODS | PUSH_V03)
    assert {"SendMessage", "GetTask", "message/send", "GetExtendedAgentCard"} <= listed


@pytest.mark.parametrize(("method", "params", "code", "reason"), REFUSED, ids=[r[0] for r in REFUSED])
def test_stdio_refuses_what_the_card_turns_off(stdio, method, params, code, reason):
    check_refusal(stdio.call(method, params)["error"], code, reason, method)


def test_stdio_still_answers_what_the_card_offers(stdio):
    task = stdio.call("SendMessage", V1_MESSAGE)["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    extended = stdio.call("GetExtendedAgentCard", {})["result"]
    assert [s["id"] for s in extended["skills"]][-1] == "audit"
    ours = next(e for e in extended["capabilities"]["extensions"] if e["uri"] == EXTENSION)
    assert ours["params"]["limits"]["maxMessageSize"] == 8 * 1024 * 1024  # the transport's, as served


# -- HTTP ---------------------------------------------------------------------------------
@pytest.fixture
async def agent_server(tmp_path):
    app = build(auth_token=TOKEN).asgi_app(workspace=tmp_path, memory=True)
    server = UvicornServer(app)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http():
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


async def sdk_client(server, http, binding: str):
    card = await A2ACardResolver(http, server.url).get_agent_card()
    return card, ClientFactory(ClientConfig(httpx_client=http, supported_protocol_bindings=[binding])).create(card)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_sdk_reads_what_the_publisher_set(agent_server, http, binding):
    card, client = await sdk_client(agent_server, http, binding)
    assert (card.provider.organization, card.provider.url) == ("Example Org", "https://example.org")
    assert card.documentation_url == "https://example.org/docs/quiet"
    assert list(card.default_input_modes) == ["text/plain"]
    assert list(card.default_output_modes) == ["text/plain", "application/json"]
    assert not card.capabilities.streaming and not card.capabilities.push_notifications
    assert card.capabilities.extended_agent_card
    assert list(card.security_schemes) == ["bearerAuth"]
    assert card.security_schemes["bearerAuth"].http_auth_security_scheme.scheme == "Bearer"

    extended = await client.get_extended_agent_card(pb.GetExtendedAgentCardRequest())
    assert [s.id for s in extended.skills][-1] == "audit" and "audit" not in [s.id for s in card.skills]
    ours = next(e for e in extended.capabilities.extensions if e.uri == EXTENSION)
    names = ours.params["methodNames"]
    assert "SendMessage" in names["1.0"] and not set(names["1.0"]) & (STREAMING_METHODS | PUSH_METHODS)
    assert ours.params["actors"][0]["name"] == "Quiet" and ours.params["actors"][0]["kind"] == "published"
    assert ours.params["limits"]["maxJsonDepth"] >= 8
    assert ours.params["limits"]["maxMessageSize"] == MAX_BODY_BYTES
    public = next(e for e in card.capabilities.extensions if e.uri == EXTENSION)
    assert "methodNames" not in public.params and "_cleveragents/plan/*" in list(public.params["methods"])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_sdk_is_refused_what_the_card_turns_off(agent_server, http, binding):
    _, client = await sdk_client(agent_server, http, binding)
    (sent,) = [event async for event in client.send_message(pb.SendMessageRequest(message=pb.Message(
        message_id="m-sdk", role=pb.Role.ROLE_USER, parts=[pb.Part(text="hi")])))]
    assert sent.task.status.state == pb.TaskState.TASK_STATE_COMPLETED
    # The SDK's client would not stream to this card: its transport is asked directly.
    stream = client._transport.send_message_streaming(pb.SendMessageRequest(message=pb.Message(
        message_id="m-stream", role=pb.Role.ROLE_USER, parts=[pb.Part(text="hi")])))
    with pytest.raises(UnsupportedOperationError):
        await anext(stream)
    with pytest.raises(PushNotificationNotSupportedError):
        await client.create_task_push_notification_config(pb.TaskPushNotificationConfig(
            task_id=sent.task.id, url="https://example.org/hook"))


@pytest.mark.parametrize(("method", "params", "code", "reason"), REFUSED, ids=[r[0] for r in REFUSED])
async def test_json_rpc_over_http_refuses_what_the_card_turns_off(agent_server, http, method, params, code, reason):
    response = await http.post(agent_server.url + "/a2a", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                                "params": params})
    if response.headers["content-type"].startswith("text/event-stream"):  # a streaming method: one SSE event
        (data,) = [line for line in response.text.splitlines() if line.startswith("data:")]
        body = json.loads(data.removeprefix("data:"))
    else:
        body = response.json()
    check_refusal(body["error"], code, reason, method)


async def test_rest_refuses_a_stream_and_a_push_config(agent_server, http):
    stream = await http.post(agent_server.url + "/message:stream", json=V1_MESSAGE)
    assert stream.status_code == 400 and stream.json()["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION"
    push = await http.post(agent_server.url + "/v1/tasks/t-1/pushNotificationConfigs",
                           json={"pushNotificationConfig": {"url": "https://example.org/hook"}})
    assert push.status_code == 400 and push.json()["error"]["status"] == "FAILED_PRECONDITION"


@pytest.mark.parametrize("path", ["/extendedAgentCard", "/v1/card"])
async def test_the_extended_card_is_private_to_the_credential(agent_server, http, path):
    response = await http.get(agent_server.url + path)
    assert response.status_code == 200 and response.json()["name"] == "Quiet"
    assert response.headers["cache-control"] == "private, max-age=300"
    assert "Authorization" in response.headers["vary"]
    public = await http.get(agent_server.url + "/.well-known/agent-card.json")
    assert public.headers["cache-control"].startswith("public")
    async with httpx.AsyncClient(timeout=10) as anonymous:
        refused = await anonymous.get(agent_server.url + path)
    assert refused.status_code == 401 and "private" not in refused.headers.get("cache-control", "")


# -- the backend's own card ------------------------------------------------------------------
@pytest.fixture
async def backend(tmp_path):
    app = build_app(settings=Settings(workspace=tmp_path, memory=True, push_allowed_networks=("127.0.0.1/32",)),
                    auth=HttpAuth.of([TOKEN], ["key-1"]))
    server = UvicornServer(app)
    await server.start()
    yield server
    await server.stop()


async def test_the_backends_card_lists_its_skills_and_method_globs(backend, http):
    card, client = await sdk_client(backend, http, "JSONRPC")
    assert [s.id for s in card.skills] == ["plan-lifecycle", "registry-crud", "context-management"]
    assert all(s.description and s.tags for s in card.skills)
    ours = next(e for e in card.capabilities.extensions if e.uri == EXTENSION)
    globs = list(ours.params["methods"])
    assert {"_cleveragents/plan/*", "_cleveragents/registry/*", "_cleveragents/context/*", "session.*"} <= set(globs)
    assert sorted(card.security_schemes) == ["apiKey", "bearerAuth"]

    extended = await client.get_extended_agent_card(pb.GetExtendedAgentCardRequest())
    skills = [s.id for s in extended.skills]
    assert skills[:3] == ["plan-lifecycle", "registry-crud", "context-management"] and "fs.search" in skills
    params = next(e for e in extended.capabilities.extensions if e.uri == EXTENSION).params
    assert "_cleveragents/plan/use" in params["methodNames"]["extension"]
    assert "SendStreamingMessage" in params["methodNames"]["1.0"]
    assert "local/default" in [a["name"] for a in params["actors"]]
    assert all("settings" not in a for a in params["actors"])
    assert {"maxJsonDepth", "maxMetadataSize", "maxTerminalTasks", "toolTimeoutSeconds"} <= set(params["limits"])

    response = await http.get(backend.url + "/extendedAgentCard")
    assert response.headers["vary"] == "Authorization, X-API-Key"


async def test_the_backend_takes_the_short_push_config_names(backend, http):
    async def call(method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return (await http.post(backend.url + "/a2a", json=body)).json()

    task = (await call("message/send", V03_MESSAGE))["result"]
    hook = {"id": "hook-1", "url": "http://127.0.0.1:9/hook"}
    created = await call("pushNotificationConfig/set", {"taskId": task["id"], "pushNotificationConfig": hook})
    assert "result" in created, created
    assert created["result"]["pushNotificationConfig"]["id"] == "hook-1", created
    got = await call("pushNotificationConfig/get", {"id": task["id"], "pushNotificationConfigId": "hook-1"})
    assert got["result"] == created["result"]
    listed = await call("pushNotificationConfig/list", {"id": task["id"]})
    assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == ["hook-1"]
