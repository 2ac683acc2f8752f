"""A message must name itself (``messageId``) and a 0.3 part must say its ``kind``: the
server refuses a request that lacks either with -32602 naming the field, in both
dialects, on JSON-RPC, HTTP+JSON and stdio. What a peer agent answers is read as well
as it can be, so a sloppy peer's reply still reaches our client."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from cleveragents import A2A, Agent
from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
from tests.contract.runners import UvicornServer
from tests.e2e.agent_server import AgentServer
from tests.e2e.test_http_server import serving

V1 = {"A2A-Version": "1.0"}
V03 = {"A2A-Version": "0.3"}


async def echo(text: str) -> str:
    return text


def rpc(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def field_error(error: dict) -> tuple[int, list]:
    """The code and the location of the first field error: 1.0 names it in a
    google.rpc BadRequest detail, 0.3 in ``data.errors``."""
    if isinstance(error["data"], list):
        (bad,) = [d for d in error["data"] if d["@type"].endswith("google.rpc.BadRequest")]
        field = bad["fieldViolations"][0]["field"]
        return error["code"], [int(p) if p.isdigit() else p for p in field.split(".")]
    return error["code"], error["data"]["errors"][0]["loc"]


@pytest.fixture
async def client(tmp_path):
    async with serving(A2A(agent=Agent(name="Echo", handler=echo)).asgi_app(workspace=tmp_path, memory=True)) \
            as (_, http):
        yield http


async def test_json_rpc_refuses_a_message_without_message_id_in_both_dialects(client):
    v1 = await client.post("/a2a", headers=V1, json=rpc("SendMessage", {
        "message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}}))
    assert field_error(v1.json()["error"]) == (-32602, ["message", "messageId"]), v1.text
    v03 = await client.post("/a2a", headers=V03, json=rpc("message/send", {
        "message": {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}))
    assert field_error(v03.json()["error"]) == (-32602, ["message", "messageId"]), v03.text
    listed = await client.post("/a2a", headers=V1, json=rpc("ListTasks", {}))
    assert listed.json()["result"]["tasks"] == []  # nothing was started


@pytest.mark.parametrize("part", [{"text": "hi"}, {"kind": None, "text": "hi"}])
async def test_a_0_3_part_without_kind_is_refused(client, part):
    answer = await client.post("/a2a", headers=V03, json=rpc("message/send", {
        "message": {"kind": "message", "role": "user", "messageId": "m1", "parts": [part]}}))
    assert field_error(answer.json()["error"]) == (-32602, ["message", "parts", 0, "kind"]), answer.text


async def test_http_json_refuses_a_message_without_message_id(client):
    answer = await client.post("/message:send", headers=V1, json={
        "message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "messageId" in answer.text


async def test_the_0_3_http_json_binding_names_what_a_part_lacks(client):
    """Its proto parts have no kind: an empty one is told what a part holds, not to add a kind."""
    answer = await client.post("/v1/message:send", json={
        "message": {"messageId": "m1", "role": "ROLE_USER", "content": [{}]}})
    assert answer.status_code == 400 and answer.json()["type"] == "InvalidParamsError", answer.text
    (violation,) = answer.json()["error"]["details"][1]["fieldViolations"]
    assert violation["field"] == "message.parts.0" and "exactly one of" in violation["description"]


def test_stdio_refuses_a_message_without_message_id(tmp_path):
    server = AgentServer.agent("echo_agent", "--memory", cwd=tmp_path)
    try:
        error = server.error("SendMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}})
        assert field_error(error) == (-32602, ["message", "messageId"])
        assert server.result("ListTasks", {})["tasks"] == []
    finally:
        assert server.close() == 0


async def _sloppy_rpc(request: Request) -> JSONResponse:
    """A peer that leaves out its reply's messageId and tags no parts (0.3)."""
    body = await request.json()
    reply = {"kind": "message", "role": "agent", "parts": [{"text": "hello from a sloppy peer"}]}
    return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": reply})


async def test_our_client_reads_a_sloppy_peers_reply():
    peer = Starlette(routes=[Route("/rpc", _sloppy_rpc, methods=["POST"])])
    server = UvicornServer(peer)
    await server.start()
    try:
        card = {"name": "Sloppy", "url": server.url + "/rpc", "protocolVersion": "0.3.0",
                "preferredTransport": "JSONRPC"}
        async with A2AClient(ServerConnectionConfig(url=server.url, token="unused"), card=card) as client:
            reply = await client.send("hi")
    finally:
        await server.stop()
    assert reply.parts[0].text == "hello from a sloppy peer" and reply.message_id
