"""The HTTP app on real uvicorn (127.0.0.1): auth, cards, errors at the HTTP edge,
streams (concurrency, a disconnect cancels the task), and event subscriptions that
resume from Last-Event-ID."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys

import httpx
import pytest
from a2a.client import A2AClientError, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as types_v03
from a2a.types import a2a_pb2 as pb
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf import json_format

from cleveragents import A2A, Agent
from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app
from tests.conftest import REPO
from tests.contract.runners import UvicornServer, sse_messages
from tests.e2e.test_http_sdk import handler, message
from tests.listening import listening

V1 = {"A2A-Version": "1.0"}


def rpc(method: str, params: dict | None = None, msg_id: int | str = 1) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


def v1_message(text: str) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}


@contextlib.asynccontextmanager
async def serving(app):
    """``app`` on uvicorn (127.0.0.1, a free port), and a client for it."""
    server = UvicornServer(app)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            yield server, client
    finally:
        await server.stop()


@pytest.fixture
async def served(tmp_path):
    """The echo agent, with bearer tokens and an API key, and an extended-card callback."""
    def extend(card: dict) -> dict:
        card["skills"].append({"id": "secret", "name": "secret", "description": "Only for callers", "tags": ["x"]})
        return card

    published = A2A(agent=Agent(name="Echo", handler=handler), auth_token="token-1",
                    extended_agent_card_callback=extend)
    async with serving(published.asgi_app(workspace=tmp_path, memory=True, auth_tokens=("token-2",),
                                          api_keys=("key-1",))) as both:
        yield both


@pytest.fixture
async def open_server(tmp_path):
    """The backend itself, without auth."""
    async with serving(build_app(settings=Settings(workspace=tmp_path, memory=True))) as both:
        yield both


@pytest.fixture
async def waiting_server(tmp_path):
    """The echo agent without auth: "wait ..." messages wait to be cancelled."""
    async with serving(A2A(agent=Agent(name="Echo", handler=handler)).asgi_app(workspace=tmp_path, memory=True)) as both:
        yield both


# -- auth -----------------------------------------------------------------------------
async def test_calls_need_a_right_credential(served):
    _, client = served
    missing = await client.post("/a2a", json=rpc("GetTask", {"id": "x"}, 7), headers=V1)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="a2a", ApiKey realm="a2a", header="X-API-Key"'
    body = missing.json()
    assert body["id"] == 7 and body["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    extension = (await client.post("/a2a", json=rpc("_cleveragents/health/check"))).json()["error"]
    assert extension["code"] == -32002 and extension["data"] == {"schemes": ["bearerAuth", "apiKey"]}
    for headers in ({"Authorization": "Bearer token-3"}, {"Authorization": "Bearer token-1x"},
                    {"Authorization": "Basic token-1"}, {"X-API-Key": "key-2"}, {"X-API-Key": ""}):
        assert (await client.post("/a2a", json=rpc("GetTask", {"id": "x"}), headers=headers)).status_code == 401
    for headers in ({"Authorization": "Bearer token-1"}, {"Authorization": "bearer token-2"}, {"X-API-Key": "key-1"}):
        answer = await client.post("/a2a", json=rpc("GetTask", {"id": "x"}), headers={**headers, **V1})
        assert answer.status_code == 200 and answer.json()["error"]["code"] == -32001  # in, and no such task
    rest = await client.get("/tasks/x")
    assert rest.status_code == 401 and rest.json()["error"]["status"] == "UNAUTHENTICATED"
    assert (await client.get("/tasks/x", headers={"X-API-Key": "key-1"})).status_code == 404


async def test_the_cards_are_public_and_the_extended_card_is_not(served):
    server, client = served
    card = (await client.get("/.well-known/agent-card.json")).json()
    # Each scheme in 1.0's spelling and 0.3's: 1.0 and 0.3 clients read this card.
    assert card["securitySchemes"] == {
        "bearerAuth": {"httpAuthSecurityScheme": {"scheme": "Bearer"}, "type": "http", "scheme": "Bearer"},
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"},
                   "type": "apiKey", "in": "header", "name": "X-API-Key"}}
    assert card["capabilities"]["extendedAgentCard"] is True and card["supportsAuthenticatedExtendedCard"] is True
    assert card["supportedInterfaces"][0]["url"] == server.url + "/a2a"
    assert "secret" not in [s["id"] for s in card["skills"]]
    assert (await client.get("/.well-known/agent.json")).status_code == 200
    assert (await client.post("/a2a", json=rpc("GetExtendedAgentCard"), headers=V1)).status_code == 401
    assert (await client.get("/extendedAgentCard")).status_code == 401
    extended = (await client.get("/extendedAgentCard", headers={"Authorization": "Bearer token-2"})).json()
    assert "secret" in [s["id"] for s in extended["skills"]]
    legacy = (await client.post("/a2a", json=rpc("agent/getAuthenticatedExtendedCard"),
                                headers={"X-API-Key": "key-1"})).json()["result"]
    assert legacy["protocolVersion"] == "0.3.0" and "secret" in [s["id"] for s in legacy["skills"]]


async def test_the_sdk_client_with_and_without_a_token(served):
    server, _ = served
    async with httpx.AsyncClient() as anonymous:
        card = parse_agent_card((await anonymous.get(server.url + "/.well-known/agent-card.json")).json())
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": "Bearer nope"}) as wrong:
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=wrong)).create(card)
        with pytest.raises(A2AClientError, match="401"):
            await client.get_task(pb.GetTaskRequest(id="x"))
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": "Bearer token-1"}) as right:
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=right)).create(card)
        sent = [e async for e in client.send_message(message("hi"))][0].task
        assert sent.status.state == pb.TaskState.TASK_STATE_COMPLETED
        extended = await client.get_extended_agent_card(pb.GetExtendedAgentCardRequest())
        assert "secret" in [s.id for s in extended.skills]


# -- cards ----------------------------------------------------------------------------
async def test_cards_validate_and_revalidate(open_server):
    server, client = open_server
    response = await client.get("/.well-known/agent-card.json")
    card = response.json()
    # One card for 1.0 clients (which skip 0.3's fields) and 0.3 clients (which skip 1.0's).
    parsed = json_format.ParseDict(card, pb.AgentCard(), ignore_unknown_fields=True)
    assert parsed == parse_agent_card(json.loads(response.text))  # (it takes the dict apart)
    validate_proto_required_fields(parsed)
    assert {(i.protocol_binding, i.protocol_version) for i in parsed.supported_interfaces} == {
        ("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "0.3")}
    assert set(card) - set(pb.AgentCard.DESCRIPTOR.fields_by_camelcase_name) == {
        "url", "protocolVersion", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard"}
    read_by_0_3 = types_v03.AgentCard.model_validate(card)
    assert read_by_0_3.url == server.url + "/a2a" and read_by_0_3.protocol_version == "0.3.0"
    caps = card["capabilities"]
    assert caps["streaming"] and caps["pushNotifications"] and caps["extendedAgentCard"]
    ext = {e["uri"]: e for e in caps["extensions"]}["urn:cleveragents:extensions:v1"]
    assert "_cleveragents/plan/*" in ext["params"]["methods"] and "methods" not in ext
    assert card["skills"] and card["defaultInputModes"] and card["defaultOutputModes"]
    assert response.headers["cache-control"].startswith("public") and response.headers["last-modified"].endswith("GMT")
    etag = response.headers["etag"]
    assert (await client.get("/.well-known/agent-card.json", headers={"If-None-Match": etag})).status_code == 304
    since = {"If-Modified-Since": response.headers["last-modified"]}
    assert (await client.get("/.well-known/agent-card.json", headers=since)).status_code == 304
    assert (await client.get("/.well-known/agent-card.json", headers={"If-None-Match": '"other"'})).status_code == 200

    old = await client.get("/.well-known/agent.json")
    legacy = types_v03.AgentCard.model_validate(old.json())
    assert legacy.url == server.url + "/a2a" and legacy.protocol_version == "0.3.0"
    assert legacy.preferred_transport == "JSONRPC" and old.headers["etag"] != etag


# -- the HTTP edge --------------------------------------------------------------------
async def test_content_type_version_and_bad_bodies(open_server):
    _, client = open_server
    wrong = await client.post("/a2a", content=json.dumps(rpc("GetTask", {"id": "x"}, 3)),
                              headers={"Content-Type": "text/plain", **V1})
    assert wrong.status_code == 415
    error = wrong.json()["error"]
    assert wrong.json()["id"] == 3 and error["code"] == -32005
    assert error["data"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert (await client.post("/a2a", content=b"{}", headers={"Content-Type": "text/plain"})).json()["error"]["code"] == -32005
    unsupported = (await client.post("/a2a", json=rpc("GetTask", {"id": "x"}), headers={"A2A-Version": "2.0"})).json()
    assert unsupported["error"]["code"] == -32009
    empty = (await client.post("/a2a", json=rpc("tasks/get", {"id": "x"}), headers={"A2A-Version": ""})).json()
    assert empty["error"]["code"] == -32001  # empty means 0.3, which is served
    bad = (await client.post("/a2a", content=b"{nope", headers={"Content-Type": "application/json"})).json()
    assert bad["id"] is None and bad["error"]["code"] == -32700
    huge = await client.post("/a2a", content=b" " * (16 * 1024 * 1024 + 1), headers={"Content-Type": "application/json"})
    assert huge.status_code == 413 and huge.json()["error"]["data"] == {"max_message_size": 16 * 1024 * 1024}
    rest = await client.post("/message:send", content=b"{}", headers={"Content-Type": "text/plain"})
    assert rest.status_code == 415 and rest.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    a2a_json = "application/a2a+json"
    sent = await client.post("/message:send", json=v1_message("hi"), headers={"Content-Type": a2a_json, "Accept": a2a_json})
    assert sent.headers["content-type"].startswith(a2a_json) and sent.json()["task"]["id"]


# -- streams --------------------------------------------------------------------------
async def _first_item(response: httpx.Response) -> dict:
    async for _, _, data in sse_messages(response):
        return json.loads(data)
    raise AssertionError("the stream ended before its first item")


async def _state(client: httpx.AsyncClient, task_id: str) -> str:
    return (await client.post("/a2a", json=rpc("GetTask", {"id": task_id}), headers=V1)).json()["result"]["status"]["state"]


async def _wait_for_state(client: httpx.AsyncClient, task_id: str, state: str) -> None:
    for _ in range(200):
        if await _state(client, task_id) == state:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} never reached {state}")


async def test_a_blocking_send_is_cancelled_when_its_client_goes_away(waiting_server):
    server, client = waiting_server
    async with httpx.AsyncClient(base_url=server.url, timeout=0.5) as impatient:
        with pytest.raises(httpx.ReadTimeout):
            await impatient.post("/a2a", json=rpc("SendMessage", v1_message("wait c")), headers=V1)
    listed = (await client.post("/a2a", json=rpc("ListTasks"), headers=V1)).json()["result"]["tasks"]
    await _wait_for_state(client, listed[0]["id"], "TASK_STATE_CANCELED")


async def test_concurrent_streams_do_not_block_each_other(waiting_server):
    _, client = waiting_server
    async with client.stream("POST", "/a2a", json=rpc("SendStreamingMessage", v1_message("wait 1")), headers=V1) as one, \
            client.stream("POST", "/a2a", json=rpc("SendStreamingMessage", v1_message("wait 2")), headers=V1) as two:
        assert "task" in (await _first_item(one))["result"]
        assert "task" in (await _first_item(two))["result"]
        sends = [client.post("/a2a", json=rpc("SendMessage", v1_message(f"n{i}"), i), headers=V1) for i in range(16)]
        done = await asyncio.wait_for(asyncio.gather(*sends), 5)  # while both streams still wait
        assert {r.json()["result"]["task"]["status"]["state"] for r in done} == {"TASK_STATE_COMPLETED"}


# -- event subscriptions --------------------------------------------------------------
async def _events(client: httpx.AsyncClient, count: int, headers: dict | None = None, path: str = "/a2a") -> tuple:
    """Open a subscription, create ``count`` sessions once it is live, read their events."""
    seen: list[tuple[str, str, dict]] = []
    kwargs = {"json": rpc("_cleveragents/event/subscribe")} if path == "/a2a" else {}
    async with client.stream("POST" if path == "/a2a" else "GET", path, **kwargs,
                             headers={"Accept": "text/event-stream", **(headers or {})}) as response:
        messages = sse_messages(response)
        _, _, first = await anext(messages)
        subscribed = json.loads(first)["result"]
        for _ in range(count):
            await client.post("/a2a", json=rpc("session.create"))
        while len(seen) < subscribed["replayed"] + count:
            event, event_id, data = await asyncio.wait_for(anext(messages), 5)
            seen.append((event, event_id, json.loads(data)))
    return subscribed, seen


async def test_event_streams_use_the_sse_wire_format_and_resume_from_last_event_id(open_server):
    _, client = open_server
    subscribed, seen = await _events(client, 2)
    assert subscribed["live"] is True
    for event, event_id, data in seen:
        assert event == "SessionStatusUpdateEvent" and data["method"] == "_cleveragents/event"
        assert data["params"]["event_id"] == event_id and "id" not in data
    first_id = seen[0][1]
    # Missed while disconnected: resuming after the first event replays the second, then
    # the new ones arrive live, in order, none lost.
    resumed, again = await _events(client, 1, {"Last-Event-ID": first_id})
    assert resumed["replayed"] == 1
    assert [e[1] for e in again][0] == seen[1][1] and len(again) == 2 and again[1][1] > seen[1][1]
    # EventSource clients use GET, with the same resume header.
    _, via_get = await _events(client, 1, {"Last-Event-ID": again[0][1]}, path="/events")
    assert [e[1] for e in via_get][0] == again[1][1]


async def test_plan_events_are_task_notifications(open_server, tmp_path):
    _, client = open_server
    async with client.stream("POST", "/a2a", json=rpc("_cleveragents/event/subscribe",
                                                      {"event_types": ["TaskStatusUpdateEvent"]}),
                             headers={"Accept": "text/event-stream"}) as response:
        messages = sse_messages(response)
        await anext(messages)
        plan = (await client.post("/a2a", json=rpc("_cleveragents/plan/use", {
            "action_name": "replace", "arguments": {"pattern": "a", "replacement": "b", "glob": "*.txt"}}))).json()
        event, event_id, data = await asyncio.wait_for(anext(messages), 5)
    notification = json.loads(data)
    assert event == "TaskStatusUpdateEvent" and notification["method"] == "task/statusUpdate"
    params = notification["params"]
    assert params["taskId"] == params["planId"] == plan["result"]["plan_id"] and params["state"] == "ready"
    assert params["eventId"] == event_id


# -- the entry point ------------------------------------------------------------------
def test_the_entry_point_serves_on_loopback_and_a_free_port(tmp_path):
    with listening([sys.executable, "-m", "cleveragents.transports.http", "--memory", "--workspace", str(tmp_path),
                    "--port", "0", "--auth-token", "t"], clean_exit=True) as served:
        assert not served.before, served.before  # the first thing it says
        match = re.match(r"listening on http://(127\.0\.0\.1):(\d+)", served.line)
        assert match, served.line
        url = f"http://127.0.0.1:{match.group(2)}"
        assert httpx.get(url + "/.well-known/agent-card.json").status_code == 200
        assert httpx.post(url + "/a2a", json=rpc("_cleveragents/health/check")).status_code == 401
        health = httpx.post(url + "/a2a", json=rpc("_cleveragents/health/check"), headers={"Authorization": "Bearer t"})
        assert health.json()["result"]["status"] == "ok"


async def test_sigterm_ends_an_open_event_stream_cleanly_and_at_once(tmp_path):
    """A service manager stops the server with SIGTERM: an open stream ends as a stream
    ends, within a second, rather than being cut when uvicorn's graceful shutdown
    times out (5 s, and a broken chunked body for the client)."""
    import signal
    import time

    with listening([sys.executable, "-m", "cleveragents.transports.http", "--memory", "--workspace", str(tmp_path),
                    "--port", "0", "--auth-token", "t"], clean_exit=True) as served:
        async with httpx.AsyncClient(timeout=30) as client:
            async with client.stream("POST", served.url + "/a2a", json=rpc("_cleveragents/event/subscribe"),
                                     headers={"Authorization": "Bearer t", "Accept": "text/event-stream"}) as stream:
                lines = stream.aiter_lines()
                assert "subscription_id" in await anext(lines)
                sent = time.monotonic()
                served.process.send_signal(signal.SIGTERM)
                rest = [line async for line in lines]  # a broken body raises here
                ended = time.monotonic() - sent
        assert served.process.wait(10) == 0
    assert ended < 2, f"the stream ended {ended:.1f} s after SIGTERM ({rest})"


SERVE_TWICE = """
import sys
from cleveragents import A2A, Agent
from tests.e2e.test_http_sdk import handler

a2a = A2A(agent=Agent(name="Echo", handler=handler), auth_token="t")
for _ in range(2):  # Ctrl-C stops the first; the second serves on
    print("served, exit code", a2a.serve(port=0, workspace=sys.argv[1], memory=True), file=sys.stderr, flush=True)
"""


async def test_a_server_started_after_one_was_interrupted_keeps_its_streams_open(tmp_path):
    """A program that serves again after Ctrl-C stopped its first server: the streams
    of the second stay open (sse-starlette's own shutdown flag, set by the first
    interrupt, would end them at once)."""
    import signal
    import subprocess

    process = subprocess.Popen([sys.executable, "-c", SERVE_TWICE, str(tmp_path)], cwd=REPO, text=True,
                               stderr=subprocess.PIPE)
    try:
        def url() -> str:
            while "listening on" not in (line := process.stderr.readline()):
                assert line, "the program ended before it listened"
            return line.split()[-1]

        await asyncio.to_thread(url)
        process.send_signal(signal.SIGINT)
        second = await asyncio.to_thread(url)
        async with httpx.AsyncClient(timeout=30) as client:
            async with client.stream("POST", second + "/a2a", json=rpc("_cleveragents/event/subscribe"),
                                     headers={"Authorization": "Bearer t", "Accept": "text/event-stream"}) as stream:
                lines = stream.aiter_lines()
                assert "subscription_id" in await anext(lines)

                async def to_the_end() -> list[str]:
                    return [line async for line in lines]
                with pytest.raises(TimeoutError):  # open: nothing more to say, and no end
                    await asyncio.wait_for(to_the_end(), 2)
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        process.kill()
        process.wait()
        process.stderr.close()


async def test_the_app_mounts_inside_another_asgi_app(tmp_path):
    from starlette.applications import Starlette
    from starlette.routing import Mount

    sub = A2A(agent=Agent(name="Echo", handler=handler)).asgi_app(workspace=tmp_path, memory=True)
    server = UvicornServer(Starlette(routes=[Mount("/agent", app=sub)]))  # no lifespan reaches `sub`
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            sent = (await client.post("/agent/a2a", json=rpc("SendMessage", v1_message("mounted")), headers=V1)).json()
            assert sent["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            card = (await client.get("/agent/.well-known/agent-card.json")).json()
            assert card["supportedInterfaces"][0]["url"] == server.url + "/agent/a2a"
            assert (await client.get(f"/agent/tasks/{sent['result']['task']['id']}")).status_code == 200
    finally:
        await server.stop()
        async with sub.router.lifespan_context(sub):  # what a parent app does to close it
            pass
