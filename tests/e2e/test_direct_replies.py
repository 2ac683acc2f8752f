"""A published agent's handler may answer with a message alone, starting no task: as
``SendMessage``'s result, as a stream of that one message, in both dialects, over
JSON-RPC, HTTP+JSON and stdio, and to the official SDK's client."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb

from cleveragents import A2A, Agent
from tests.contract.runners import UvicornServer
from tests.e2e.agent_server import AgentServer
from tests.e2e.agents.greeter_agent import greet

TOKEN = "direct-token-71c2"
V1 = {"A2A-Version": "1.0", "Authorization": f"Bearer {TOKEN}"}
V03 = {"A2A-Version": "0.3", "Authorization": f"Bearer {TOKEN}"}


def v1(text: str) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}


def v03(text: str) -> dict:
    return {"message": {"kind": "message", "role": "user", "messageId": f"m-{text}",
                        "parts": [{"kind": "text", "text": text}]}}


def rpc(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def sse_items(response: httpx.Response) -> list[dict]:
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


@pytest.fixture
async def server(tmp_path):
    app = A2A(agent=Agent(name="Greeter", handler=greet), auth_token=TOKEN).asgi_app(workspace=tmp_path, memory=True)
    server = UvicornServer(app)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        yield server, http
    await server.stop()


async def no_tasks(http: httpx.AsyncClient) -> None:
    listed = (await http.post("/a2a", json=rpc("ListTasks", {}), headers=V1)).json()["result"]
    assert listed["tasks"] == [], listed


async def test_json_rpc_1_0_answers_with_the_message_and_stores_no_task(server):
    _, http = server
    answer = (await http.post("/a2a", json=rpc("SendMessage", v1("hello")), headers=V1)).json()["result"]
    message = answer["message"]
    assert set(answer) == {"message"}
    assert message["role"] == "ROLE_AGENT" and message["parts"] == [{"text": "hi there"}]
    assert message["metadata"] == {"greeting": True} and message["messageId"] and "taskId" not in message
    assert message["contextId"]
    await no_tasks(http)
    streamed = await http.post("/a2a", json=rpc("SendStreamingMessage", v1("hello")),
                               headers={**V1, "Accept": "text/event-stream"})
    (item,) = sse_items(streamed)
    assert item["result"]["message"]["parts"] == [{"text": "hi there"}]
    await no_tasks(http)
    # Anything else is a task, as before.
    task = (await http.post("/a2a", json=rpc("SendMessage", v1("build")), headers=V1)).json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_json_rpc_0_3_answers_with_a_kind_message(server):
    _, http = server
    answer = (await http.post("/a2a", json=rpc("message/send", v03("hello")), headers=V03)).json()["result"]
    assert answer["kind"] == "message" and answer["role"] == "agent"
    assert answer["parts"] == [{"kind": "text", "text": "hi there"}]
    streamed = await http.post("/a2a", json=rpc("message/stream", v03("hello")),
                               headers={**V03, "Accept": "text/event-stream"})
    (item,) = sse_items(streamed)
    assert item["result"]["kind"] == "message"


async def test_http_json_answers_with_the_message(server):
    _, http = server
    sent = await http.post("/message:send", json=v1("hello"), headers=V1)
    assert sent.status_code == 200 and sent.json()["message"]["parts"] == [{"text": "hi there"}], sent.text
    streamed = await http.post("/message:stream", json=v1("hello"), headers={**V1, "Accept": "text/event-stream"})
    (item,) = sse_items(streamed)
    assert item["message"]["parts"] == [{"text": "hi there"}]
    await no_tasks(http)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize("streaming", [False, True])
async def test_the_sdk_client_receives_the_message(server, binding, streaming):
    served, _ = server
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        card = parse_agent_card((await http.get(served.url + "/.well-known/agent-card.json")).json())
        client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http,
                                            supported_protocol_bindings=[binding])).create(card)
        request = pb.SendMessageRequest(message=pb.Message(
            message_id="m-sdk", role=pb.Role.ROLE_USER, parts=[pb.Part(text="hello")]))
        events = [event async for event in client.send_message(request)]
    assert [event.WhichOneof("payload") for event in events] == ["message"]
    assert events[0].message.parts[0].text == "hi there" and events[0].message.role == pb.Role.ROLE_AGENT


def test_stdio_answers_with_the_message(tmp_path):
    server = AgentServer.agent("greeter_agent", "--memory", cwd=tmp_path)
    try:
        answer = server.result("SendMessage", {**v1("hello"), "A2A-Version": "1.0"})
        assert answer["message"]["parts"] == [{"text": "hi there"}]
        msg_id = server.send("SendStreamingMessage", {**v1("hello"), "A2A-Version": "1.0"})
        final = server.response(msg_id)["result"]
        assert final["message"]["parts"] == [{"text": "hi there"}]
        assert [params["message"]["parts"] for _, params in server.items(msg_id)] == [[{"text": "hi there"}]]
        assert server.result("ListTasks", {"A2A-Version": "1.0"})["tasks"] == []
    finally:
        server.close()



async def test_a_non_blocking_send_gets_its_task_at_once(server):
    """The client asked for the task to follow: the handler is not waited for, and a
    message it returns ends that task as its answer."""
    _, http = server
    sent = v1("hello") | {"configuration": {"returnImmediately": True}}
    task = (await http.post("/a2a", json=rpc("SendMessage", sent), headers=V1)).json()["result"]["task"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED")
    for _ in range(50):
        got = (await http.post("/a2a", json=rpc("GetTask", {"id": task["id"]}), headers=V1)).json()["result"]
        if got["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.05)
    assert got["status"]["state"] == "TASK_STATE_COMPLETED", got
    assert "hi there" in json.dumps(got)


async def test_a_streaming_handler_starts_its_task_before_its_first_chunk(tmp_path):
    release = asyncio.Event()

    async def slow(text: str):
        await release.wait()
        yield "done"

    app = A2A(agent=Agent(name="Slow", handler=slow), auth_token=TOKEN).asgi_app(workspace=tmp_path, memory=True)
    served = UvicornServer(app)
    await served.start()
    try:
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
            async with http.stream("POST", "/a2a", json=rpc("SendStreamingMessage", v1("go")),
                                   headers={**V1, "Accept": "text/event-stream"}) as response:
                lines = response.aiter_lines()
                first = await asyncio.wait_for(anext(line async for line in lines if line.startswith("data:")), 5)
                assert json.loads(first[5:])["result"]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
                release.set()
    finally:
        release.set()
        await served.stop()
