"""Our outbound client (cleveragents.a2a.client) against real a2a-sdk servers.

Two servers run in background threads on 127.0.0.1, each behind a bearer-token check:
one speaks A2A 1.0 (card at /.well-known/agent-card.json), the other only 0.3 (the
SDK's compat endpoint, and a 0.3 card at /.well-known/agent.json only, so the client
has to fall back). Their agent echoes the input as a two-chunk artifact; "slow"
makes it take a moment and "wait" keeps it working until it is canceled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from a2a.compat.v0_3.conversions import to_compat_agent_card
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from cleveragents.a2a.client import (
    A2AClient,
    A2AClientConnectionError,
    A2AClientError,
    A2AClientHTTPError,
    A2AClientTimeoutError,
    A2ARemoteError,
    HttpRemoteExecutionClient,
    HttpServerClient,
    ServerConnectionConfig,
)
from cleveragents.a2a.errors import A2AOperationNotFoundError
from cleveragents.domain.errors import AuthenticationError, ResourceNotFoundError, TaskNotCancelableError, TaskNotFoundError
from cleveragents.domain.task import Message, PushConfig, Task, TaskArtifactUpdate, TaskState, TaskStatusUpdate
from tests.conftest import REPO
from tests.fakes.a2a_agent import start_work

TOKEN = "right-token-8c1f"
WRONG = "wrong-token-77aa"
HOOK = "http://127.0.0.1:9/hook"


class EchoExecutor(AgentExecutor):
    async def execute(self, context, event_queue):
        text, updater = await start_work(context, event_queue)
        if text == "wait":
            await asyncio.Event().wait()  # until canceled
        if text == "slow":
            await asyncio.sleep(0.8)  # long enough to subscribe while it works, even on a busy machine
        await updater.add_artifact([pb.Part(text="echo: ")], artifact_id="echo")
        await updater.add_artifact([pb.Part(text=text)], artifact_id="echo", append=True, last_chunk=True)
        await updater.complete()

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def bearer_only(app):
    """401 with a JSON-RPC error body for every call without the token; cards are public."""
    async def guarded(scope, receive, send):
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            if dict(scope["headers"]).get(b"authorization") != f"Bearer {TOKEN}".encode():
                body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Unauthorized"}}
                await JSONResponse(body, 401, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        await app(scope, receive, send)
    return guarded


@dataclass
class Served:
    version: str
    base: str

    def config(self, token: str = TOKEN, **kw) -> ServerConnectionConfig:
        return ServerConnectionConfig(url=self.base, token=token, **kw)


def _card(base: str, version: str, extended: bool = False) -> pb.AgentCard:
    skills = [pb.AgentSkill(id="echo", name="Echo", description="Echoes its input", tags=["echo"])]
    if extended:
        skills.append(pb.AgentSkill(id="secret", name="Secret", description="Only for callers with a token",
                                    tags=["extended"]))
    return pb.AgentCard(
        name="echo", description="Echo agent", version="1.0.0",
        supported_interfaces=[pb.AgentInterface(url=base + "/a2a", protocol_binding="JSONRPC",
                                                protocol_version=version)],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=True, extended_agent_card=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"], skills=skills,
    )


async def _resumable_events(request):
    """A fixed SSE answer in the shape of `_cleveragents/event/subscribe`: a ping, a
    notification and a response, with ids; it reports the Last-Event-ID it got."""
    resumed = json.dumps(request.headers.get("last-event-id"))
    body = (": ping\n\n"
            f'id: 01A\nevent: plan.started\ndata: {{"jsonrpc":"2.0","method":"_cleveragents/event",'
            f'"params":{{"n":1,"resumed_from":{resumed}}}}}\n\n'
            'id: 01B\ndata: {"jsonrpc":"2.0","id":1,\ndata: "result":{"n":2}}\n\n')
    return PlainTextResponse(body, media_type="text/event-stream")


def _app(base: str, version: str):
    card = _card(base, version)
    handler = DefaultRequestHandler(EchoExecutor(), InMemoryTaskStore(), card,
                                    push_config_store=InMemoryPushNotificationConfigStore(),
                                    extended_agent_card=_card(base, version, extended=True))
    routes = create_jsonrpc_routes(handler, "/a2a", enable_v0_3_compat=True)
    routes.append(Route("/broken/a2a", lambda request: PlainTextResponse("boom", 503), methods=["POST"]))
    routes.append(Route("/sse/a2a", _resumable_events, methods=["POST"]))
    if version == "1.0":
        routes += create_agent_card_routes(card)
    else:
        legacy = to_compat_agent_card(card).model_dump(mode="json", by_alias=True, exclude_none=True)
        routes.append(Route("/.well-known/agent.json", lambda request: JSONResponse(legacy)))
    return bearer_only(Starlette(routes=routes))


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Served]]:
    running = []
    served = {}
    for version in ("1.0", "0.3"):
        sock = _listening()
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(_app(base, version), log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        served[version] = Served(version, base)
    deadline = time.monotonic() + 10
    while not all(server.started for server, _, _ in running):
        assert time.monotonic() < deadline, "the a2a-sdk servers did not start"
        time.sleep(0.02)
    yield served
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(params=["1.0", "0.3"])
def server(request, servers) -> Served:
    return servers[request.param]


@pytest.fixture
async def client(server) -> A2AClient:
    async with A2AClient(server.config()) as client:
        yield client


def _text(task: Task) -> str:
    return "".join(p.text or "" for a in task.artifacts for p in a.parts)


# -- card and dialect ---------------------------------------------------------------
async def test_reads_the_card_and_picks_the_servers_dialect(client, server):
    assert client.interface.version == server.version
    assert client.interface.url == server.base + "/a2a"
    card = await client.card()
    assert card["name"] == "echo"
    assert ("supportedInterfaces" in card) == (server.version == "1.0")  # the 0.3 server has only agent.json


async def test_a_forced_dialect_the_card_does_not_offer_is_refused(servers):
    with pytest.raises(A2AClientError) as caught:
        async with A2AClient(servers["1.0"].config(), version="0.3"):
            pass
    assert "no JSON-RPC" in str(caught.value) and "interface in A2A 0.3" in str(caught.value)
    assert servers["1.0"].base in str(caught.value)


# -- messages -----------------------------------------------------------------------
async def test_send_blocks_until_the_task_ends(client):
    task = await client.send("hello", history_length=1)
    assert isinstance(task, Task)
    assert task.state is TaskState.COMPLETED
    assert _text(task) == "echo: hello"
    assert len(task.history) <= 1


async def test_send_without_blocking_answers_at_once(client):
    task = await client.send("slow", blocking=False)
    assert task.state in (TaskState.SUBMITTED, TaskState.WORKING)
    for _ in range(50):
        if (task := await client.get(task.id)).terminal:
            break
        await asyncio.sleep(0.05)
    assert task.state is TaskState.COMPLETED and _text(task) == "echo: slow"


async def test_stream_yields_the_task_then_updates_in_order(client):
    async with client.stream("chunks") as stream:
        items = [item async for item in stream]
    assert isinstance(items[0], Task)
    chunks = [i for i in items if isinstance(i, TaskArtifactUpdate)]
    assert [c.artifact.parts[0].text for c in chunks] == ["echo: ", "chunks"]
    assert chunks[1].append and chunks[1].last_chunk
    last = items[-1]
    assert isinstance(last, TaskStatusUpdate) and last.status.state is TaskState.COMPLETED and last.final


async def test_a_message_object_keeps_its_ids(client):
    from cleveragents.domain.task import Part, Role

    message = Message(message_id="m-keep-1", role=Role.USER, parts=(Part.of_text("ids"),))
    task = await client.send(message)
    assert task.history[0].message_id == "m-keep-1"


# -- tasks --------------------------------------------------------------------------
async def test_get_and_task_not_found(client, server):
    done = await client.send("get me")
    again = await client.get(done.id)
    assert again.id == done.id and again.state is TaskState.COMPLETED
    with pytest.raises(TaskNotFoundError) as caught:
        await client.get("no-such-task")
    error = caught.value
    assert isinstance(error, A2ARemoteError) and error.code == -32001
    assert server.base in str(error) and ("GetTask" in str(error) or "tasks/get" in str(error))
    if server.version == "1.0":
        assert error.reason == "TASK_NOT_FOUND" and error.details


async def test_list_pages_through_tasks(client, server):
    first = await client.send("list one")
    await client.send("list two", metadata=None)
    if server.version == "0.3":  # the SDK's 0.3 endpoint has no tasks/list
        with pytest.raises(A2AOperationNotFoundError):
            await client.list(page_size=1)
        return
    page = await client.list(page_size=1, context_id=first.context_id)
    assert [t.id for t in page.tasks] == [first.id] and page.page_size == 1
    everything = [t async for t in client.iter_tasks(page_size=1)]
    assert len(everything) >= 2 and len({t.id for t in everything}) == len(everything)
    completed = await client.list(state=TaskState.COMPLETED, page_size=100)
    assert completed.tasks and all(t.state is TaskState.COMPLETED for t in completed.tasks)


async def test_cancel_a_working_task_and_refuse_a_finished_one(client):
    task = await client.send("wait", blocking=False)
    canceled = await client.cancel(task.id)
    assert canceled.state is TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError) as caught:
        await client.cancel(task.id)
    assert caught.value.code == -32002


async def test_subscribe_follows_a_running_task(client):
    task = await client.send("slow", blocking=False)
    async with client.subscribe(task.id) as stream:
        items = [item async for item in stream]
    assert isinstance(items[0], Task) and items[0].id == task.id
    states = [i.status.state for i in items if isinstance(i, TaskStatusUpdate)]
    assert states[-1] is TaskState.COMPLETED
    assert any(isinstance(i, TaskArtifactUpdate) for i in items)


# -- push configs -------------------------------------------------------------------
async def test_push_config_create_get_list_delete(client):
    task = await client.send("push")
    made = await client.create_push_config(PushConfig(id="hook-1", task_id=task.id, url=HOOK, token="tk"))
    assert (made.id, made.task_id, made.url, made.token) == ("hook-1", task.id, HOOK, "tk")
    assert await client.get_push_config(task.id, "hook-1") == made
    assert [c.id for c in await client.list_push_configs(task.id)] == ["hook-1"]
    await client.delete_push_config(task.id, "hook-1")
    assert await client.list_push_configs(task.id) == []


# -- cards and auth -----------------------------------------------------------------
async def test_extended_card_needs_the_token(client, server):
    extended = await client.extended_card()
    assert "secret" in [s["id"] for s in extended["skills"]]
    async with A2AClient(server.config(token=WRONG)) as stranger:
        assert (await stranger.card())["name"] == "echo"  # the public card needs no token
        with pytest.raises(AuthenticationError) as caught:
            await stranger.extended_card()
    assert caught.value.status == 401
    assert WRONG not in str(caught.value) and WRONG not in repr(stranger)


async def test_a_wrong_token_is_refused_on_every_call(server):
    async with A2AClient(server.config(token=WRONG)) as client:
        with pytest.raises(AuthenticationError) as caught:
            await client.send("hi")
        with pytest.raises(AuthenticationError):
            async with client.stream("hi") as stream:
                [item async for item in stream]
    assert server.base in str(caught.value)


async def test_the_token_is_never_logged(server, caplog):
    caplog.set_level(logging.DEBUG)
    async with A2AClient(server.config()) as client:
        await client.send("log me")
        with pytest.raises(TaskNotFoundError):
            await client.get("missing")
    # The a2a-sdk server in this process logs request headers at DEBUG; the client side must not.
    client_side = [r.getMessage() for r in caplog.records if not r.name.startswith(("a2a.", "uvicorn"))]
    assert any("httpx" in r.name for r in caplog.records)  # the client's HTTP layer did log
    assert not [line for line in client_side if TOKEN in line]


# -- the generic surface ------------------------------------------------------------
async def test_call_and_call_stream_reach_any_method(client, server):
    v1 = server.version == "1.0"
    message = ({"messageId": "g-1", "role": "ROLE_USER", "parts": [{"text": "raw"}]} if v1 else
               {"kind": "message", "messageId": "g-1", "role": "user", "parts": [{"kind": "text", "text": "raw"}]})
    result = await client.call("SendMessage" if v1 else "message/send", {"message": message})
    task = result["task"] if v1 else result
    assert task["id"]
    fetched = await client.call("GetTask" if v1 else "tasks/get", {"id": task["id"]})
    assert fetched["id"] == task["id"]
    streamed = [item async for item in client.call_stream(
        "SendStreamingMessage" if v1 else "message/stream", {"message": {**message, "messageId": "g-2"}})]
    assert len(streamed) >= 4 and all(isinstance(item, dict) for item in streamed)


async def test_an_unknown_method_is_a_clear_error(client):
    with pytest.raises(A2AOperationNotFoundError) as caught:
        await client.call("_cleveragents/plan/status", {"plan_id": "p"})
    assert caught.value.code == -32601 and "_cleveragents/plan/status" in str(caught.value)


async def test_server_client_and_remote_execution_over_http(server):
    async with HttpServerClient(server.config()) as remote:
        method = "GetTask" if server.version == "1.0" else "tasks/get"
        with pytest.raises(TaskNotFoundError):
            await remote.call(method, {"id": "nope"})
    async with HttpRemoteExecutionClient(server.config()) as executor:
        # An a2a-sdk agent has no plans: the refusal is the remote's own.
        with pytest.raises(A2AOperationNotFoundError):
            await executor.execute("plan-1")


async def test_call_stream_yields_notifications_and_results_and_resumes(servers):
    base = servers["1.0"].base
    async with A2AClient(servers["1.0"].config(), card=_card_at(base + "/sse/a2a")) as client:
        stream = client.call_stream("_cleveragents/event/subscribe", {})
        got = [(item, stream.last_event_id) async for item in stream]
        assert got == [({"n": 1, "resumed_from": None}, "01A"), ({"n": 2}, "01B")]
        resumed = [item async for item in client.call_stream("_cleveragents/event/subscribe", {},
                                                              last_event_id=stream.last_event_id)]
        assert resumed[0]["resumed_from"] == "01B"


# -- transport failures -------------------------------------------------------------
def _card_at(url: str) -> dict:
    return {"supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}


async def test_a_server_that_never_answers_times_out():
    silent = _listening()  # connections queue up in the backlog and are never answered
    base = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        config = ServerConnectionConfig(url=base, token=TOKEN, timeout_seconds=0.3)
        started = time.monotonic()
        async with A2AClient(config) as never:
            pass
    except A2AClientTimeoutError as exc:
        assert base in str(exc) and "agent card" in str(exc) and isinstance(exc, TimeoutError)
        async with A2AClient(config, card=_card_at(base + "/a2a")) as client:
            with pytest.raises(A2AClientTimeoutError) as caught:
                await client.get("t")
        assert "GetTask" in str(caught.value) and "0.3s" in str(caught.value)
        assert time.monotonic() - started < 5
    else:
        pytest.fail(f"no timeout from {never!r}")
    finally:
        silent.close()


async def test_connection_refused_is_a_clear_error():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    with pytest.raises(A2AClientConnectionError) as caught:
        async with A2AClient(ServerConnectionConfig(url=base, token=TOKEN)):
            pass
    assert base in str(caught.value) and "cannot connect" in str(caught.value)
    assert isinstance(caught.value, ConnectionError)


async def test_http_errors_name_the_status_and_url(servers):
    base = servers["1.0"].base
    config = servers["1.0"].config()
    async with A2AClient(config, card=_card_at(base + "/broken/a2a")) as client:
        with pytest.raises(A2AClientHTTPError) as caught:
            await client.get("t")
    assert caught.value.status == 503 and "HTTP 503" in str(caught.value) and base in str(caught.value)
    async with A2AClient(config, card=_card_at(base + "/nowhere")) as client:
        with pytest.raises(A2AClientHTTPError) as caught:
            await client.send("x")
    assert caught.value.status == 404 and "no A2A endpoint" in str(caught.value)
    with pytest.raises(A2AClientHTTPError) as caught:
        async with A2AClient(ServerConnectionConfig(url=base + "/.well-known/missing.json", token=TOKEN)):
            pass
    assert caught.value.status == 404 and "no agent card" in str(caught.value)


# -- the docs -----------------------------------------------------------------------
async def test_the_docs_example_runs_as_written(servers, capsys):
    server = servers["1.0"]  # the example lists tasks, which the SDK's 0.3 endpoint cannot
    page = (REPO / "docs" / "client.md").read_text()
    namespace: dict = {}
    exec(re.search(r"```python\n(.*?)```", page, re.S).group(1), namespace)  # noqa: S102
    assert await namespace["main"](server.base, TOKEN) == "echo: hello again"
    printed = capsys.readouterr().out
    assert f"speaking A2A {server.version}" in printed and "refused: -32001" in printed


# -- our own HTTP app: the `_cleveragents/*` methods through the generic surface ---------
@pytest.fixture
async def ours(tmp_path):
    from cleveragents import A2A, Agent
    from tests.contract.runners import UvicornServer

    async def echo(text: str):
        yield "echo: "
        yield text

    app = A2A(agent=Agent(name="Echo", handler=echo), description="Echoes", auth_token=TOKEN).asgi_app(
        workspace=tmp_path, memory=True)
    server = UvicornServer(app)
    yield Served("1.0", await server.start())
    await server.stop()


async def test_extension_methods_on_our_own_server(ours):
    async with HttpServerClient(ours.config()) as remote:
        assert (await remote.call("_cleveragents/health/check"))["status"] == "ok"
        async with remote.client.call_stream("_cleveragents/event/subscribe", {}) as events:
            first = await events.__anext__()
        assert first["subscription_id"] and first["live"] is True
        task = await remote.client.send("over http")
        assert _text(task) == "echo: over http"
    async with HttpRemoteExecutionClient(ours.config()) as executor:
        with pytest.raises(ResourceNotFoundError) as caught:
            await executor.execute("01J0000000000000000000000Z")
    assert caught.value.code == -32001 and caught.value.data["plan_id"] == "01J0000000000000000000000Z"
