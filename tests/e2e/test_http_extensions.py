"""A2A extensions over HTTP, on real uvicorn: the cards list them, a request that does
not activate a required one is refused (JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3), one
that does is served, and the answer echoes the activated extensions the agent supports.
The official a2a-sdk client activates them through its service parameters."""

from __future__ import annotations

import json

import httpx
import pytest
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import ExtensionSupportRequiredError

from cleveragents import A2A, Agent, AgentExtension
from tests.contract.runners import UvicornServer, sse_messages

TOKEN = "ext-token-7c2a"
OURS = "urn:cleveragents:extensions:v1"
SIGNED = "https://example.com/ext/signed/v1"  # required
TRACE = "https://example.com/ext/trace/v1"  # optional, declared by the agent
UNKNOWN = "https://example.com/ext/unknown/v1"


def echo(text: str) -> str:
    return text


@pytest.fixture
async def server(tmp_path):
    agent = Agent(name="Echo", handler=echo, extensions=[AgentExtension(TRACE, "Traces each step")])
    a2a = A2A(agent=agent, auth_token=TOKEN, extensions=[
        AgentExtension(SIGNED, "Messages carry a signature", required=True, params={"alg": "ed25519"})])
    served = UvicornServer(a2a.asgi_app(workspace=tmp_path, memory=True))
    await served.start()
    yield served
    await served.stop()


@pytest.fixture
async def http(server):
    async with httpx.AsyncClient(base_url=server.url, timeout=10,
                                 headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def v1_send(text: str = "hi") -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}}


def v03_send(text: str = "hi", method: str = "message/send") -> dict:
    return {"jsonrpc": "2.0", "id": 2, "method": method, "params": {
        "message": {"kind": "message", "role": "user", "messageId": f"m03-{text}",
                    "parts": [{"kind": "text", "text": text}]}}}


def rest_message(text: str = "hi") -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": f"r-{text}", "parts": [{"text": text}]}}


def reply(task: dict) -> str:
    """The text of a finished task's artifacts (1.0 or 0.3)."""
    return "".join(part["text"] for artifact in task["artifacts"] for part in artifact["parts"])


async def test_both_cards_list_the_extensions_next_to_ours(http):
    expected = [
        (OURS, False),
        (TRACE, False),
        (SIGNED, True),
    ]
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        response = await http.get(path, headers={"Authorization": ""})  # public, and never gated
        assert response.status_code == 200
        listed = response.json()["capabilities"]["extensions"]
        assert [(e["uri"], e["required"]) for e in listed] == expected, path
        assert listed[2]["params"] == {"alg": "ed25519"} and listed[2]["description"] == "Messages carry a signature"
        assert listed[1]["description"] == "Traces each step" and "params" not in listed[1]
    # The SDK reads the card, and the required extension in it.
    card = parse_agent_card((await http.get("/.well-known/agent-card.json")).json())
    assert [(e.uri, e.required) for e in card.capabilities.extensions] == expected


async def test_json_rpc_refuses_a_request_without_the_required_extension(http):
    refused = await http.post("/a2a", json=v1_send(), headers={"A2A-Version": "1.0", "A2A-Extensions": TRACE})
    assert refused.status_code == 200
    error = refused.json()["error"]
    assert error["code"] == -32008 and SIGNED in error["message"]
    (info,) = error["data"]
    assert info["reason"] == "EXTENSION_SUPPORT_REQUIRED"
    assert info["metadata"]["method"] == "SendMessage" and json.loads(info["metadata"]["missing"]) == [SIGNED]
    assert "A2A-Extensions" not in refused.headers

    # 0.3 has no such error in its table: the same code, its data an object.
    refused = await http.post("/a2a", json=v03_send(), headers={"A2A-Version": "0.3"})
    assert refused.json()["error"]["code"] == -32008
    assert refused.json()["error"]["data"] == {"method": "message/send", "missing": [SIGNED]}


async def test_json_rpc_serves_and_echoes_the_supported_activated_extensions(http):
    answered = await http.post("/a2a", json=v1_send("signed"), headers={
        "A2A-Version": "1.0", "A2A-Extensions": f"{UNKNOWN}, {SIGNED}", "a2a-extensions": TRACE})
    assert reply(answered.json()["result"]["task"]) == "signed"
    assert answered.headers["A2A-Extensions"] == f"{SIGNED}, {TRACE}"  # the unknown one is not echoed

    # A 0.3 client's header: echoed under its own name.
    answered = await http.post("/a2a", json=v03_send("legacy"), headers={"X-A2A-Extensions": SIGNED})
    assert reply(answered.json()["result"]) == "legacy"
    assert answered.headers["X-A2A-Extensions"] == SIGNED and "A2A-Extensions" not in answered.headers

    # A params key activates them for one call, as "A2A-Version" sets the version.
    call = v1_send("by-param")
    call["params"]["A2A-Extensions"] = [SIGNED]
    answered = await http.post("/a2a", json=call, headers={"A2A-Version": "1.0"})
    assert reply(answered.json()["result"]["task"]) == "by-param"


async def test_json_rpc_streams_are_gated_and_echo_too(http):
    async with http.stream("POST", "/a2a", json={**v1_send("streamed"), "method": "SendStreamingMessage"},
                           headers={"A2A-Version": "1.0", "A2A-Extensions": SIGNED}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["A2A-Extensions"] == SIGNED
        events = [json.loads(data) async for _, _, data in sse_messages(response)]
    assert all("result" in event for event in events) and events

    async with http.stream("POST", "/a2a", json=v03_send("streamed", "message/stream")) as response:
        (event,) = [json.loads(data) async for _, _, data in sse_messages(response)]
    assert event["error"]["code"] == -32008 and event["error"]["data"]["missing"] == [SIGNED]


async def test_rest_refuses_with_failed_precondition_and_serves_with_the_extension(http):
    refused = await http.post("/message:send", json=rest_message())
    assert refused.status_code == 400
    body = refused.json()["error"]
    assert body["status"] == "FAILED_PRECONDITION" and body["code"] == 400 and SIGNED in body["message"]
    assert body["details"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"

    refused = await http.post("/v1/message:send", json={"message": {
        "messageId": "r03", "role": "ROLE_USER", "content": [{"text": "hi"}]}})
    assert refused.status_code == 400
    assert refused.json()["type"] == "ExtensionSupportRequiredError"
    assert refused.json()["error"]["status"] == "FAILED_PRECONDITION"

    answered = await http.post("/message:send", json=rest_message("rest"), headers={"A2A-Extensions": SIGNED})
    assert answered.status_code == 200 and reply(answered.json()["task"]) == "rest"
    assert answered.headers["A2A-Extensions"] == SIGNED

    async with http.stream("POST", "/message:stream", json=rest_message("rest-stream"),
                           headers={"X-A2A-Extensions": f"{SIGNED},{TRACE}"}) as response:
        assert response.status_code == 200 and response.headers["X-A2A-Extensions"] == f"{SIGNED}, {TRACE}"
        assert [data async for _, _, data in sse_messages(response)]


async def test_card_reads_and_our_own_methods_are_not_gated(http):
    extended = await http.post("/a2a", json={"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard"},
                               headers={"A2A-Version": "1.0"})
    assert SIGNED in [e["uri"] for e in extended.json()["result"]["capabilities"]["extensions"]]
    assert (await http.get("/extendedAgentCard")).status_code == 200
    health = await http.post("/a2a", json={"jsonrpc": "2.0", "id": 4, "method": "_cleveragents/health/check"},
                             headers={"A2A-Extensions": OURS})
    assert "result" in health.json()
    assert health.headers["A2A-Extensions"] == OURS


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_sdk_client_activates_the_extension_through_service_parameters(server, binding):
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        card = parse_agent_card((await http.get(server.url + "/.well-known/agent-card.json")).json())
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http,
                                            supported_protocol_bindings=[binding])).create(card)
        request = pb.SendMessageRequest(message=pb.Message(message_id="sdk", role=pb.Role.ROLE_USER,
                                                           parts=[pb.Part(text="from the sdk")]))
        with pytest.raises(ExtensionSupportRequiredError):
            [event async for event in client.send_message(request)]
        activated = ClientCallContext(service_parameters=ServiceParametersFactory.create(
            [with_a2a_extensions([card.capabilities.extensions[2].uri])]))
        (sent,) = [event async for event in client.send_message(request, context=activated)]
    assert sent.task.artifacts[0].parts[0].text == "from the sdk"
