"""Each kind of reply that docs/publishing.md shows, as clients receive it from a real
server: the page's own examples (the blocks marked ``docs:run: example NAME``), each
written to a module and its agent served as the page defines it.

Over HTTP, one uvicorn server hosts every example, each under a path of its own, and
the official a2a-sdk client (1.x) calls it over JSON-RPC and HTTP+JSON, blocking and
streaming (and, through its compat transports, in A2A 0.3). On stdio, each example
runs in a server process of its own (a stdio server publishes one agent), started
together, and a stdio client calls it in both dialects, each result checked against
the SDK's types. The kinds: text as the ``response`` artifact, as the status message
or both (chosen by ``A2A(reply_as=...)``), streamed chunks, files, data and A2UI parts,
an artifact of several parts, a message instead of a task, a rejected task, a question
(input-required) answered in the same task, and a handler that reads the incoming
message."""

from __future__ import annotations

import base64
import contextlib
import runpy
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, struct_pb2

from cleveragents import A2A, is_a2ui_part
from tests.e2e.agent_server import DIALECTS, AgentServer, Dialect
from tests.e2e.test_docs_pages import examples

TOKEN = "replies-token-5a0c"
BINDINGS = pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
EXAMPLES = examples("publishing.md")
# The endpoints served: name -> (the page's example, the variable holding its agent,
# the endpoint's reply_as or None for the agent's own choice).
ENDPOINTS: dict[str, tuple[str, str, str | None]] = {
    "shout": ("handlers", "shouter", None),
    "spell": ("handlers", "speller", None),
    "parts": ("parts", "agent", None),
    "export": ("export", "agent", None),
    "artifact": ("reply-as", "agent", "artifact"),
    "message": ("reply-as", "agent", "message"),
    "both": ("reply-as", "agent", "both"),
    "greet": ("message", "agent", None),
    "reject": ("reject", "agent", None),
    "review": ("input-required", "agent", None),
    "incoming": ("incoming", "agent", None),
}
# On stdio: every endpoint but the parts example's (tests/e2e/test_published_parts.py
# serves it on stdio) and the shouter (the speller is the same handler, streamed).
STDIO_ENDPOINTS = [name for name in ENDPOINTS if name not in ("parts", "shout")]
LAUNCHER = """\
import runpy
import sys

from cleveragents import A2A

path, variable, reply_as = sys.argv[1:4]
namespace = runpy.run_path(path, run_name="docs_example")
A2A(agent=namespace[variable], reply_as=None if reply_as == "-" else reply_as).serve_stdio(memory=True)
"""


@pytest.fixture(scope="module")
def example_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("examples")
    files = {}
    for name, block in EXAMPLES.items():
        files[name] = folder / f"{name.replace('-', '_')}.py"
        files[name].write_text(block.text)
    return files


@pytest.fixture(scope="module")
def namespaces(example_files) -> dict[str, dict[str, Any]]:
    """What each example defines, run under another name than ``__main__``: its
    agents, and nothing served or sent."""
    return {name: runpy.run_path(str(path), run_name=f"docs_example_{name.replace('-', '_')}")
            for name, path in example_files.items()}


def test_every_example_of_the_page_is_served():
    assert {example for example, _, _ in ENDPOINTS.values()} == set(EXAMPLES)


# -- HTTP: one server, every example under its own path ---------------------------------------
class ByPath:
    """An ASGI app giving each request to the app served under its first path segment,
    and the lifespan to all of them (each starts and stops its own services)."""

    def __init__(self, apps: dict[str, Any]):
        self.apps = apps

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self.apps.get(scope["path"].split("/")[1])
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        async with contextlib.AsyncExitStack() as stack:
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    for app in self.apps.values():
                        await stack.enter_async_context(app.router.lifespan_context(app))
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await stack.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return


@pytest.fixture(scope="module")
def http_server(namespaces, tmp_path_factory):
    """The examples on one uvicorn server, in a thread of its own (each test has its
    own event loop); yields its URL."""
    import uvicorn

    workspace = tmp_path_factory.mktemp("http")
    apps = {name: A2A(agent=namespaces[example][variable], reply_as=reply_as, prefix=f"/{name}",
                      auth_token=TOKEN).asgi_app(workspace=workspace, memory=True)
            for name, (example, variable, reply_as) in ENDPOINTS.items()}
    server = uvicorn.Server(uvicorn.Config(ByPath(apps), host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, name="examples over HTTP", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(15)


@pytest.fixture
async def connect(http_server):
    """A function giving an a2a-sdk client of an endpoint, from its card."""
    async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async def client(endpoint: str, binding: str, streaming: bool, legacy: bool = False):
            # The 0.3 card (agent.json) makes the SDK speak A2A 0.3 through its compat transports.
            path = "/.well-known/agent.json" if legacy else "/.well-known/agent-card.json"
            card = parse_agent_card((await http.get(f"{http_server}/{endpoint}{path}")).json())
            config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding])
            return ClientFactory(config).create(card)

        yield client


_sent = iter(range(1, 1_000_000))


def request(text: str, message_id: str | None = None, **fields: Any) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=message_id or f"m-{next(_sent)}", role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)], **fields))


async def exchange(client, message: pb.SendMessageRequest) -> tuple[pb.Task | pb.Message, list[str]]:
    """What the exchange ends with, built from what the client received (the message;
    or the task, or the stream's task, artifact updates and last status), and the
    kinds of event."""
    task: pb.Task | None = None
    kinds: list[str] = []
    async for event in client.send_message(message):
        kind = event.WhichOneof("payload")
        kinds.append(kind)
        if kind == "message":
            return event.message, kinds
        if kind == "task":
            task = event.task
        elif kind == "artifact_update":
            assert task is not None
            update = event.artifact_update
            existing = next((a for a in task.artifacts if a.artifact_id == update.artifact.artifact_id), None)
            if existing is not None and update.append:
                existing.parts.extend(update.artifact.parts)
            elif existing is not None:
                existing.CopyFrom(update.artifact)
            else:
                task.artifacts.append(update.artifact)
        elif kind == "status_update":
            assert task is not None
            task.status.CopyFrom(event.status_update.status)
    assert task is not None, kinds
    return task, kinds


async def final_task(client, message: pb.SendMessageRequest) -> tuple[pb.Task, list[str]]:
    task, kinds = await exchange(client, message)
    assert isinstance(task, pb.Task), task
    return task, kinds


def text(parts) -> str:
    return "".join(part.text for part in parts)


def artifacts(task: pb.Task) -> list[tuple[str, str]]:
    return [(a.name, text(a.parts)) for a in task.artifacts]


def as_dict(message) -> Any:
    return json_format.MessageToDict(message)


@BINDINGS
@STREAMING
async def test_handlers_answer_with_text_and_stream_it(connect, binding, streaming):
    shouted, _ = await final_task(await connect("shout", binding, streaming), request("hello"))
    assert shouted.status.state == pb.TaskState.TASK_STATE_COMPLETED
    assert artifacts(shouted) == [("response", "HELLO!")]
    spelled, kinds = await final_task(await connect("spell", binding, streaming), request("abc"))
    assert artifacts(spelled) == [("response", "a.b.c.")]
    if streaming:  # chunk by chunk, as the generator yields
        assert kinds.count("artifact_update") >= 3, kinds


@BINDINGS
@STREAMING
async def test_each_part_of_the_parts_example(connect, namespaces, binding, streaming):
    example = namespaces["parts"]
    client = await connect("parts", binding, streaming)

    async def parts(text: str) -> list[Any]:
        task, _ = await final_task(client, request(text))
        (artifact,) = task.artifacts
        assert artifact.name == ("Q3 report" if text == "report" else "response")
        return list(artifact.parts)

    (thumbnail,) = await parts("thumbnail")
    assert (thumbnail.raw, thumbnail.filename, thumbnail.media_type) == (example["THUMBNAIL"], "q3-thumb.png",
                                                                        "image/png")
    (chart,) = await parts("chart")
    assert (chart.url, chart.filename) == ("https://example.com/charts/q3.png", "q3.png")
    (figures,) = await parts("figures")
    assert as_dict(figures.data) == example["FIGURES"] and not is_a2ui_part(as_dict(figures))
    (form,) = await parts("form")
    assert is_a2ui_part(as_dict(form)) and "createSurface" in as_dict(form.data)
    report = await parts("report")
    assert [part.WhichOneof("content") for part in report] == ["text", "raw", "url", "data"]


@BINDINGS
@STREAMING
async def test_a_list_of_parts_is_one_artifact(connect, binding, streaming):
    task, _ = await final_task(await connect("export", binding, streaming), request("export"))
    (artifact,) = task.artifacts
    csv, form = artifact.parts
    assert (csv.raw, csv.filename, csv.media_type) == (b"quarter,revenue\nQ3,12.5\n", "q3.csv", "text/csv")
    assert is_a2ui_part(as_dict(form)) and as_dict(form.data) == {"deleteSurface": {"surfaceId": "feedback"}}


@BINDINGS
@STREAMING
@pytest.mark.parametrize(("endpoint", "names", "as_message"), [
    ("artifact", ["data", "response"], False), ("message", ["data"], True), ("both", ["data", "response"], True)])
async def test_the_text_reply_is_delivered_as_the_endpoint_chose(connect, binding, streaming, endpoint, names,
                                                                as_message):
    client = await connect(endpoint, binding, streaming)
    task, kinds = await final_task(client, request("two words"))
    assert task.status.state == pb.TaskState.TASK_STATE_COMPLETED
    assert [a.name for a in task.artifacts] == names
    data = next(a for a in task.artifacts if a.name == "data")
    assert as_dict(data.parts[0].data) == {"words": 2}
    if "response" in names:
        assert dict(artifacts(task))["response"] == "You said two words."
    assert task.status.HasField("message") is as_message
    if as_message:
        assert text(task.status.message.parts) == "You said two words."
        assert task.status.message.role == pb.Role.ROLE_AGENT
    if streaming:
        assert kinds.count("artifact_update") >= len(names), kinds
    stored = await client.get_task(pb.GetTaskRequest(id=task.id))
    assert artifacts(stored) == artifacts(task) and stored.status.HasField("message") is as_message
    assert text(stored.history[-1].parts) == "You said two words."


@BINDINGS
@STREAMING
async def test_a_message_instead_of_a_task(connect, binding, streaming):
    client = await connect("greet", binding, streaming)
    message, kinds = await exchange(client, request("hello"))
    assert kinds == ["message"] and isinstance(message, pb.Message)
    assert message.role == pb.Role.ROLE_AGENT and not message.task_id
    assert text(message.parts[:1]) == "Hello! Send me a file name to review."
    assert as_dict(message.parts[1].data) == {"next": "file name"} and as_dict(message.metadata) == {"kind": "greeting"}
    task, _ = await final_task(client, request("app.py"))  # anything else is a task
    assert artifacts(task) == [("response", "Reviewing app.py.")]


@BINDINGS
@STREAMING
async def test_a_rejected_task(connect, binding, streaming):
    client = await connect("reject", binding, streaming)
    task, _ = await final_task(client, request("delete the logs"))
    assert task.status.state == pb.TaskState.TASK_STATE_REJECTED
    assert text(task.status.message.parts) == "I only read files; I never delete them."
    stored = await client.get_task(pb.GetTaskRequest(id=task.id))
    assert stored.status.state == pb.TaskState.TASK_STATE_REJECTED
    read, _ = await final_task(client, request("the logs"))
    assert artifacts(read) == [("response", "Reading the logs.")]


@BINDINGS
@STREAMING
async def test_a_question_and_its_answer_in_the_same_task(connect, binding, streaming):
    client = await connect("review", binding, streaming)
    asked, _ = await final_task(client, request("review my change"))
    assert asked.status.state == pb.TaskState.TASK_STATE_INPUT_REQUIRED
    assert text(asked.status.message.parts) == "Which file?"
    done, _ = await final_task(client, request("app.py", task_id=asked.id, context_id=asked.context_id))
    assert done.id == asked.id and done.status.state == pb.TaskState.TASK_STATE_COMPLETED
    stored = await client.get_task(pb.GetTaskRequest(id=asked.id))
    assert [text(m.parts) for m in stored.history] == ["review my change", "Which file?", "app.py",
                                                       "Reviewing app.py."]
    assert artifacts(stored) == [("response", "Reviewing app.py.")]


@BINDINGS
@STREAMING
async def test_the_handler_reads_the_incoming_message(connect, binding, streaming):
    client = await connect("incoming", binding, streaming)
    metadata = struct_pb2.Struct()
    metadata.update({"client": "editor"})
    data = struct_pb2.Value()
    data.struct_value.update({"line": 3})
    sent = pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-42-{binding}-{streaming}", role=pb.Role.ROLE_USER, metadata=metadata,
        parts=[pb.Part(text="look"), pb.Part(data=data), pb.Part(url="https://example.com/a.py")]))
    task, _ = await final_task(client, sent)
    assert text(task.status.message.parts) == f"m-42-{binding}-{streaming} from editor: ['text', 'data', 'file']"


@BINDINGS
@STREAMING
async def test_the_0_3_dialect_carries_the_status_message_and_the_rejection(connect, binding, streaming):
    client = await connect("message", binding, streaming, legacy=True)
    assert type(client._transport).__name__.startswith("Compat")
    task, _ = await final_task(client, request("two words"))
    assert text(task.status.message.parts) == "You said two words." and [a.name for a in task.artifacts] == ["data"]
    client = await connect("reject", binding, streaming, legacy=True)
    task, _ = await final_task(client, request("delete it"))
    assert task.status.state == pb.TaskState.TASK_STATE_REJECTED
    assert text(task.status.message.parts) == "I only read files; I never delete them."


# -- stdio: each example in a server process of its own ------------------------------------------
@pytest.fixture(scope="module")
def stdio(example_files, tmp_path_factory):
    """A stdio server per endpoint, all started at once; yields them by name."""
    folder = tmp_path_factory.mktemp("stdio")
    launcher = folder / "serve_example.py"
    launcher.write_text(LAUNCHER)
    servers: dict[str, AgentServer] = {}
    try:
        for name in STDIO_ENDPOINTS:
            example, variable, reply_as = ENDPOINTS[name]
            servers[name] = AgentServer(launcher, str(example_files[example]), variable, reply_as or "-", cwd=folder)
        yield servers
    finally:
        for server in servers.values():
            server.close()


def send(server: AgentServer, dialect: Dialect, text: str, **fields: Any) -> dict[str, Any]:
    """A task (checked against the SDK's types) or, for a message reply, the message."""
    result = server.result(dialect.send, {**dialect.message(text, **fields), "A2A-Version": dialect.version})
    if (dialect.v1 and "message" in result) or result.get("kind") == "message":
        return result.get("message", result)
    return dialect.task_of(result)


def texts(parts: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for part in parts)


def named(task: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {artifact["name"]: artifact["parts"] for artifact in task.get("artifacts", [])}


@DIALECTS
def test_stdio_delivers_each_kind(stdio, dialect):
    completed, rejected = dialect.state("completed"), dialect.state("rejected")
    for endpoint, as_artifact, as_message in (("artifact", True, False), ("message", False, True),
                                             ("both", True, True)):
        task = send(stdio[endpoint], dialect, "two words")
        assert task["status"]["state"] == completed
        assert ("response" in named(task)) is as_artifact and "data" in named(task)
        assert ("message" in task["status"]) is as_message
        if as_message:
            assert task["status"]["message"]["parts"] == [dialect.part("You said two words.")]

    spelled = send(stdio["spell"], dialect, "abc")
    assert texts(named(spelled)["response"]) == "a.b.c."

    (csv, form) = named(send(stdio["export"], dialect, "export"))["response"]
    raw = csv["raw"] if dialect.v1 else csv["file"]["bytes"]
    assert base64.b64decode(raw) == b"quarter,revenue\nQ3,12.5\n" and is_a2ui_part(form)

    greeting = send(stdio["greet"], dialect, "hello")
    assert greeting["role"] == dialect.role("agent") and "status" not in greeting
    assert greeting["parts"][0] == dialect.part("Hello! Send me a file name to review.")

    refused = send(stdio["reject"], dialect, "delete the logs")
    assert refused["status"]["state"] == rejected
    assert refused["status"]["message"]["parts"] == [dialect.part("I only read files; I never delete them.")]

    asked = send(stdio["review"], dialect, "review my change")
    assert asked["status"]["state"] == dialect.state("input-required")
    done = send(stdio["review"], dialect, "app.py", contextId=asked["contextId"])
    assert done["id"] == asked["id"] and done["status"]["state"] == completed
    assert texts(named(done)["response"]) == "Reviewing app.py."

    seen = send(stdio["incoming"], dialect, "look", messageId=f"m-42-{dialect.version}",
                metadata={"client": "editor"})
    assert texts(seen["status"]["message"]["parts"]) == f"m-42-{dialect.version} from editor: ['text']"


@DIALECTS
def test_stdio_streams_end_with_the_rejection(stdio, dialect):
    server = stdio["reject"]
    msg_id = server.send(dialect.stream, {**dialect.message("delete it"), "A2A-Version": dialect.version})
    server.response(msg_id)
    kind, final = dialect.item(server.items(msg_id)[-1])
    assert kind == "statusUpdate" and final["status"]["state"] == dialect.state("rejected"), server.items(msg_id)
    assert final["status"]["message"]["parts"] == [dialect.part("I only read files; I never delete them.")]
