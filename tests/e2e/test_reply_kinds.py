"""Each kind of reply a published agent gives, as the official a2a-sdk client (1.x)
receives it over JSON-RPC and HTTP+JSON, blocking and streaming, and over stdio: the
text as the ``response`` artifact, as the completion's status message, or both; a data
artifact; a rejected task; a question (input-required) that the next message in the
task answers; and a handler that reads the incoming message's ids and metadata."""

from __future__ import annotations

import json

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2

from cleveragents import A2A
from tests.contract.runners import UvicornServer
from tests.e2e.agent_server import DIALECTS, AgentServer
from tests.e2e.agents.replies_agent import agent

TOKEN = "replies-token-5a0c"
BINDINGS = ["JSONRPC", "HTTP+JSON"]


@pytest.fixture
async def serve(tmp_path):
    """Serve the agent with a reply choice; yields a function giving an SDK client."""
    servers: list[UvicornServer] = []
    http = httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"})

    async def client(reply_as: str, binding: str, streaming: bool, legacy: bool = False):
        if not servers or servers[-1].reply_as != reply_as:  # type: ignore[attr-defined]
            app = A2A(agent=agent(reply_as), auth_token=TOKEN).asgi_app(workspace=tmp_path / reply_as, memory=True)
            server = UvicornServer(app)
            server.reply_as = reply_as  # type: ignore[attr-defined]
            await server.start()
            servers.append(server)
        # The 0.3 card (agent.json) makes the SDK speak A2A 0.3 through its compat transports.
        card_path = "/.well-known/agent.json" if legacy else "/.well-known/agent-card.json"
        card = parse_agent_card((await http.get(servers[-1].url + card_path)).json())
        config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding])
        return ClientFactory(config).create(card)

    yield client
    await http.aclose()
    for server in servers:
        await server.stop()


def request(text: str, **fields) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{text}-{id(fields)}", role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)], **fields))


async def final_task(client, message: pb.SendMessageRequest) -> tuple[pb.Task, list[str]]:
    """The task the exchange ends with, built from what the client received (the task,
    or the stream's task, artifact updates and last status), and the kinds of event."""
    task: pb.Task | None = None
    kinds: list[str] = []
    async for event in client.send_message(message):
        kind = event.WhichOneof("payload")
        kinds.append(kind)
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


def text(parts) -> str:
    return "".join(part.text for part in parts)


def artifacts(task: pb.Task) -> list[tuple[str, str]]:
    return [(a.name, text(a.parts)) for a in task.artifacts]


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(("reply_as", "as_artifact", "as_message"), [
    ("artifact", True, False), ("message", False, True), ("both", True, True)])
async def test_the_text_reply_is_delivered_as_chosen(serve, binding, streaming, reply_as, as_artifact, as_message):
    client = await serve(reply_as, binding, streaming)
    task, kinds = await final_task(client, request("hi"))
    assert task.status.state == pb.TaskState.TASK_STATE_COMPLETED
    assert artifacts(task) == ([("response", "echo hi")] if as_artifact else [])
    assert task.status.HasField("message") is as_message
    if as_message:
        assert text(task.status.message.parts) == "echo hi" and task.status.message.role == pb.Role.ROLE_AGENT
    if streaming:
        assert ("artifact_update" in kinds) is as_artifact
    stored = await client.get_task(pb.GetTaskRequest(id=task.id))
    assert artifacts(stored) == artifacts(task) and stored.status.HasField("message") is as_message
    assert text(stored.history[-1].parts) == "echo hi"


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_data_artifact_and_a_status_message(serve, binding, streaming):
    client = await serve("message", binding, streaming)
    task, _ = await final_task(client, request("data"))
    (data,) = task.artifacts
    assert data.name == "data" and data.parts[0].data.struct_value["count"] == 3
    assert text(task.status.message.parts) == "three"


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_rejected_task(serve, binding, streaming):
    client = await serve("artifact", binding, streaming)
    task, _ = await final_task(client, request("reject this"))
    assert task.status.state == pb.TaskState.TASK_STATE_REJECTED
    assert text(task.status.message.parts) == "I only read files."
    stored = await client.get_task(pb.GetTaskRequest(id=task.id))
    assert stored.status.state == pb.TaskState.TASK_STATE_REJECTED


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("reply_as", ["artifact", "message"])
async def test_a_question_and_its_answer_in_the_same_task(serve, binding, streaming, reply_as):
    client = await serve(reply_as, binding, streaming)
    asked, _ = await final_task(client, request("ask"))
    assert asked.status.state == pb.TaskState.TASK_STATE_INPUT_REQUIRED
    assert text(asked.status.message.parts) == "Which file?"
    done, _ = await final_task(client, request("a.py", task_id=asked.id, context_id=asked.context_id))
    assert done.id == asked.id and done.status.state == pb.TaskState.TASK_STATE_COMPLETED
    stored = await client.get_task(pb.GetTaskRequest(id=asked.id))
    assert [text(m.parts) for m in stored.history] == ["ask", "Which file?", "a.py", "Reading a.py."]
    if reply_as == "message":
        assert text(stored.status.message.parts) == "Reading a.py." and not stored.artifacts
    else:
        assert artifacts(stored) == [("response", "Reading a.py.")]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_handler_reads_the_incoming_message(serve, binding):
    client = await serve("message", binding, False)
    metadata = struct_pb2.Struct()
    metadata.update({"origin": "sdk"})
    task, _ = await final_task(client, request("meta", metadata=metadata))
    seen = json.loads(text(task.status.message.parts))
    assert seen["messageId"] == task.history[0].message_id and seen["taskId"] is True
    assert seen["metadata"] == {"origin": "sdk"} and seen["kinds"] == ["text"]


@DIALECTS
@pytest.mark.parametrize("reply_as", ["artifact", "message", "both"])
def test_stdio_delivers_each_kind(tmp_path, dialect, reply_as):
    """Over stdio, in both dialects, each result checked against the SDK's own types."""
    server = AgentServer.agent("replies_agent", "--memory", "--reply-as", reply_as, cwd=tmp_path)
    version = {"A2A-Version": dialect.version}

    def send(text: str, **fields) -> dict:
        return dialect.task_of(server.result(dialect.send, {**dialect.message(text, **fields), **version}))

    try:
        task = send("hi")
        assert task["status"]["state"] == dialect.state("completed")
        as_artifact = [[dialect.part("echo hi")]] if reply_as != "message" else []
        assert [a["parts"] for a in task.get("artifacts", [])] == as_artifact
        if reply_as == "artifact":
            assert "message" not in task["status"]
        else:
            assert task["status"]["message"]["parts"] == [dialect.part("echo hi")]
        rejected = send("reject it")
        assert rejected["status"]["state"] == dialect.state("rejected")
        assert rejected["status"]["message"]["parts"] == [dialect.part("I only read files.")]
        asked = send("ask")
        assert asked["status"]["state"] == dialect.state("input-required")
        done = send("b.py", contextId=asked["contextId"])
        assert done["id"] == asked["id"] and done["status"]["state"] == dialect.state("completed")
        # Streamed: the stream ends with the rejection.
        msg_id = server.send(dialect.stream, {**dialect.message("reject"), **version})
        server.response(msg_id)
        kind, final = dialect.item(server.items(msg_id)[-1])
        assert kind == "statusUpdate" and final["status"]["state"] == dialect.state("rejected"), server.items(msg_id)
        assert final["status"]["message"]["parts"] == [dialect.part("I only read files.")]
    finally:
        server.close()


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_the_0_3_dialect_carries_the_status_message_and_the_rejection(serve, binding, streaming):
    client = await serve("message", binding, streaming, legacy=True)
    assert type(client._transport).__name__.startswith("Compat")
    task, _ = await final_task(client, request("hi"))
    assert text(task.status.message.parts) == "echo hi" and not task.artifacts
    task, _ = await final_task(client, request("reject"))
    assert task.status.state == pb.TaskState.TASK_STATE_REJECTED
    assert text(task.status.message.parts) == "I only read files."
