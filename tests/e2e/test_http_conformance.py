"""What clients in the wild expect of the HTTP transport, with raw requests on real
uvicorn: streaming calls answer with an event stream, their errors included."""

from __future__ import annotations

import json

import httpx
import pytest

from cleveragents import A2A, Agent
from tests.e2e.test_http_sdk import handler
from tests.e2e.test_http_server import rpc, serving, v1_message

TOKEN = "conformance-token-5b7e"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
V1 = {"A2A-Version": "1.0"}
SSE = {"Accept": "text/event-stream"}
V03_MESSAGE = {"message": {"kind": "message", "role": "user", "messageId": "m-1",
                           "parts": [{"kind": "text", "text": "hi"}]}}


@pytest.fixture
async def served(tmp_path):
    app = A2A(agent=Agent(name="Echo", handler=handler), auth_token=TOKEN).asgi_app(workspace=tmp_path, memory=True)
    async with serving(app) as (server, client):
        client.headers.update(AUTH)
        yield server, client


def sse_data(response: httpx.Response) -> list[dict]:
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


# -- streams: an error goes inside the event stream ------------------------------------
STREAM_ERRORS = [
    pytest.param("tasks/resubscribe", {"id": "no-such-task"}, {}, -32001, id="0.3-resubscribe-unknown-task"),
    pytest.param("tasks/subscribe", {"id": "no-such-task"}, {}, -32001, id="0.3-subscribe-unknown-task"),
    pytest.param("message/stream", {"message": {"kind": "message"}}, {}, -32602, id="0.3-stream-bad-params"),
    pytest.param("message/stream", V03_MESSAGE, {"A2A-Version": "9.9"}, -32009, id="0.3-stream-bad-version"),
    pytest.param("SubscribeToTask", {"id": "no-such-task"}, V1, -32001, id="1.0-subscribe-unknown-task"),
    pytest.param("SendStreamingMessage", {"message": {}}, V1, -32602, id="1.0-stream-bad-params"),
    pytest.param("SendStreamingMessage", v1_message("x"), {"A2A-Version": "9.9"}, -32009, id="1.0-stream-bad-version"),
]


@pytest.mark.parametrize(("method", "params", "headers", "code"), STREAM_ERRORS)
async def test_a_refused_stream_is_an_event_stream_holding_the_error(served, method, params, headers, code):
    _, client = served
    response = await client.post("/a2a", json=rpc(method, params, msg_id="s-1"), headers={**headers, **SSE})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    (event,) = sse_data(response)
    assert event["id"] == "s-1" and event["error"]["code"] == code and "result" not in event, event
    assert "event:" not in response.text  # a JSON-RPC stream's items are all plain `message` events


async def test_a_bad_envelope_on_a_stream_is_still_a_plain_json_rpc_error(served):
    # Before the method is known there is no stream to speak of.
    _, client = served
    response = await client.post("/a2a", content=b'{"jsonrpc": "2.0", "id": 1, "method": ', headers={
        **SSE, "Content-Type": "application/json"})
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == -32700


# -- a trailing slash: the same route, never a redirect ---------------------------------
def layouts(tmp_path):
    """(name, ASGI app, the path our routes sit under): served alone, with a prefix,
    mounted in a Starlette app, and as a FastAPI router."""
    from fastapi import FastAPI
    from starlette.applications import Starlette
    from starlette.routing import Mount

    def published(prefix: str = "") -> A2A:
        return A2A(agent=Agent(name="Echo", handler=handler), auth_token=TOKEN, prefix=prefix)

    fastapi = FastAPI()
    fastapi.include_router(published("/agent").get_router(workspace=tmp_path / "f", memory=True))
    return {
        "alone": (published().asgi_app(workspace=tmp_path / "a", memory=True), ""),
        "prefix": (published("/api").asgi_app(workspace=tmp_path / "p", memory=True), "/api"),
        "mounted": (Starlette(routes=[Mount("/agent", app=published().asgi_app(workspace=tmp_path / "m", memory=True))]),
                    "/agent"),
        "fastapi": (fastapi, "/agent"),
    }


@pytest.mark.parametrize("layout", ["alone", "prefix", "mounted", "fastapi"])
async def test_every_route_answers_with_or_without_a_trailing_slash(tmp_path, layout):
    app, base = layouts(tmp_path)[layout]
    async with serving(app) as (_, client):
        client.headers.update(AUTH)
        for path in ("/a2a", "/a2a/"):
            sent = await client.post(base + path, json=rpc("SendMessage", v1_message("hi")), headers=V1)
            assert sent.status_code == 200, (path, sent.status_code, sent.headers)
            task = sent.json()["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        rest_sent = await client.post(base + "/message:send/", json=v1_message("rest"))
        assert rest_sent.status_code == 200 and rest_sent.json()["task"]["id"], rest_sent.text
        task_id = rest_sent.json()["task"]["id"]
        for method, path in (("GET", f"/tasks/{task_id}/"), ("GET", "/tasks/"), ("GET", "/extendedAgentCard/"),
                             ("GET", f"/tasks/{task_id}/pushNotificationConfigs/"),
                             ("GET", "/.well-known/agent-card.json/"), ("GET", "/healthz/")):
            response = await client.request(method, base + path)
            assert response.status_code == 200, (path, response.status_code, response.headers)
        canceled = await client.post(base + f"/tasks/{task_id}:cancel/", json={})
        assert canceled.status_code == 400 and canceled.json()["error"]["details"][0]["reason"] == "TASK_NOT_CANCELABLE"
        streamed = await client.post(base + "/message:stream/", json=v1_message("s"))
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert sse_data(streamed)[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_path_we_do_not_serve_is_not_found_and_never_redirected(served):
    _, client = served
    assert (await client.get("/a2a/")).status_code == 405  # POST only, slash or not
    for path in ("/a2a//", "/nothing/", "/tasks/x/y/"):
        assert (await client.post(path, json={})).status_code in (404, 405)
