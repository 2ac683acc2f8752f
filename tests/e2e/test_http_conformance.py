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
    app = A2A(agent=Agent(name="Echo", handler=handler), auth_token=TOKEN).asgi_app(
        workspace=tmp_path, memory=True, push_allowed_networks=("127.0.0.1/32",))
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


# -- content type: negotiated from Accept, on every answer -------------------------------
A2A_JSON = "application/a2a+json"
ACCEPTS = [
    pytest.param(None, "application/json", id="no-accept"),
    pytest.param("*/*", "application/json", id="anything"),
    pytest.param("application/json", "application/json", id="json"),
    pytest.param(A2A_JSON, A2A_JSON, id="a2a-json"),
    pytest.param("text/event-stream, application/a2a+json;q=0.9, */*;q=0.1", A2A_JSON, id="a2a-json-among-others"),
    pytest.param("application/a2a+json;q=0, application/json", "application/json", id="a2a-json-refused"),
    pytest.param("application/json, application/a2a+json;q=0.5", "application/json", id="json-preferred"),
    pytest.param("APPLICATION/A2A+JSON; charset=utf-8", A2A_JSON, id="case-and-params"),
]


def media(response: httpx.Response) -> str:
    return response.headers["content-type"].split(";")[0].strip()


def requests_for(task_id: str) -> list[tuple[str, str, dict, object, int]]:
    """(method, path, headers, body, expected status): answers and errors, REST and JSON-RPC."""
    json_type = {"Content-Type": "application/json"}
    return [
        ("POST", "/message:send", json_type, v1_message("hi"), 200),
        ("GET", f"/tasks/{task_id}", {}, None, 200),
        ("GET", "/tasks/no-such-task", {}, None, 404),
        ("POST", f"/tasks/{task_id}:cancel", json_type, {}, 400),
        ("POST", "/message:send", json_type, {"message": {}}, 400),
        ("POST", "/message:send", {"Content-Type": "text/plain"}, v1_message("hi"), 415),
        ("GET", "/tasks", {"Authorization": "Bearer wrong"}, None, 401),
        ("POST", "/a2a", {**json_type, **V1}, rpc("GetTask", {"id": task_id}), 200),
        ("POST", "/a2a", {**json_type, **V1}, rpc("GetTask", {"id": "no-such-task"}), 200),
        ("POST", "/a2a", {"Content-Type": "text/plain"}, rpc("GetTask", {"id": task_id}), 415),
        ("POST", "/a2a", {**json_type, "Authorization": "Bearer wrong"}, rpc("GetTask", {"id": task_id}), 401),
        ("POST", "/a2a", json_type, b"{not json", 200),
        ("POST", "/a2a", {"Host": "evil.example"}, rpc("GetTask", {"id": task_id}), 421),
    ]


@pytest.mark.parametrize(("accept", "expected"), ACCEPTS)
async def test_answers_and_errors_carry_the_content_type_the_client_accepts(served, accept, expected):
    _, client = served
    task_id = (await client.post("/message:send", json=v1_message("first"))).json()["task"]["id"]
    for method, path, headers, body, status in requests_for(task_id):
        headers = {**headers, **({"Accept": accept} if accept else {})}
        content = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
        request = client.build_request(method, path, content=content, headers=headers)
        if accept is None:
            del request.headers["accept"]
        response = await client.send(request)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        assert media(response) == expected, (method, path, accept, response.headers["content-type"])
        json.loads(response.content)


@pytest.mark.parametrize("content_type", ["application/json", A2A_JSON, "application/a2a+json; charset=utf-8"])
async def test_requests_may_say_either_json_type(served, content_type):
    _, client = served
    headers = {"Content-Type": content_type}
    rest = await client.post("/message:send", content=json.dumps(v1_message("hi")), headers=headers)
    assert rest.status_code == 200 and rest.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    rpc_answer = await client.post("/a2a", content=json.dumps(rpc("SendMessage", v1_message("hi"))),
                                   headers={**headers, **V1})
    assert rpc_answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- the 0.3 HTTP+JSON binding: bodies as the v0.3 proto has them -------------------------
V03_PROTO_MESSAGE = {"message": {"messageId": "m-proto", "role": "ROLE_USER", "content": [
    {"text": "proto"},
    {"file": {"fileWithUri": "https://example.invalid/a.txt", "mimeType": "text/plain", "name": "a.txt"}},
    {"data": {"data": {"k": [1, 2]}}, "metadata": {"m": "v"}},
]}}


async def test_the_0_3_binding_reads_and_writes_the_v0_3_proto_strictly(served):
    from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb03
    from google.protobuf import json_format

    _, client = served
    sent = await client.post("/v1/message:send", json=V03_PROTO_MESSAGE)
    assert sent.status_code == 200, sent.text
    task = json_format.ParseDict(sent.json(), pb03.SendMessageResponse()).task  # strict: only the proto's fields
    assert task.status.state == pb03.TASK_STATE_COMPLETED and task.artifacts
    got = await client.get(f"/v1/tasks/{task.id}", params={"historyLength": 2})
    history = json_format.ParseDict(got.json(), pb03.Task()).history
    parts = history[0].content
    assert parts[0].text == "proto" and parts[1].file.file_with_uri == "https://example.invalid/a.txt"
    assert parts[1].file.mime_type == "text/plain" and dict(parts[2].data.data) == {"k": [1, 2]}

    # proto field names too, as a ProtoJSON parser reads them; a cancel may come bare.
    snake = {"request": {"message_id": "m-snake", "role": "ROLE_USER", "content": [{"text": "wait snake"}]}}
    async with client.stream("POST", "/v1/message:stream", json=snake) as stream:
        lines = _data_lines(stream)
        first = json_format.Parse(await anext(lines), pb03.StreamResponse())
        waiting = first.task.id
        canceled = await client.post(f"/v1/tasks/{waiting}:cancel")
        assert canceled.status_code == 200, canceled.text
        assert json_format.ParseDict(canceled.json(), pb03.Task()).status.state == pb03.TASK_STATE_CANCELLED
        rest = [json_format.Parse(line, pb03.StreamResponse()) async for line in lines]
    assert rest[-1].status_update.final and rest[-1].status_update.status.state == pb03.TASK_STATE_CANCELLED

    config = {"parent": f"tasks/{task.id}", "configId": "c1",
              "config": {"pushNotificationConfig": {"url": "http://127.0.0.1:9/hook", "token": "t"}}}
    created = await client.post(f"/v1/tasks/{task.id}/pushNotificationConfigs", json=config)
    assert created.status_code == 200, created.text
    made = json_format.ParseDict(created.json(), pb03.TaskPushNotificationConfig())
    assert made.name == f"tasks/{task.id}/pushNotificationConfigs/c1" and made.push_notification_config.id == "c1"
    listed = await client.get(f"/v1/tasks/{task.id}/pushNotificationConfigs")
    assert [c.name for c in json_format.ParseDict(listed.json(), pb03.ListTaskPushNotificationConfigResponse()).configs
            ] == [made.name]
    assert (await client.delete(f"/v1/tasks/{task.id}/pushNotificationConfigs/c1")).json() == {}


async def test_the_0_3_binding_answers_errors_with_their_status_and_name(served):
    _, client = served
    missing = await client.get("/v1/tasks/no-such-task", headers={"Accept": "application/a2a+json"})
    assert missing.status_code == 404 and media(missing) == "application/a2a+json"
    body = missing.json()
    assert body["type"] == "TaskNotFoundError" and body["message"] == body["error"]["message"]
    assert body["error"]["status"] == "NOT_FOUND" and body["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    bad = await client.post("/v1/message:send", json={"message": {"role": "ROLE_USER"}})
    assert bad.status_code == 400 and bad.json()["type"] == "InvalidParamsError"
    refused = await client.get("/v1/tasks/x", headers={"Authorization": "Bearer wrong"})
    assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    subscribed = await client.get("/v1/tasks/no-such-task:subscribe")
    assert subscribed.status_code == 404 and subscribed.json()["type"] == "TaskNotFoundError"
    assert (await client.post("/v1/message:send/", json=V03_PROTO_MESSAGE)).status_code == 200  # a slash too


async def _data_lines(response: httpx.Response):
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield line[5:].strip()
