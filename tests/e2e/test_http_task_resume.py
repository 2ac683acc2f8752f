"""Task streams over HTTP resume from ``Last-Event-ID``: a subscriber whose connection
drops mid-stream reconnects with the last SSE id it saw and gets every item it missed,
once, in order, then follows the task live (JSON-RPC and the HTTP+JSON binding)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from cleveragents import A2A, Agent
from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
from cleveragents.domain.task import TaskArtifactUpdate, TaskState, TaskStatusUpdate
from cleveragents.ids import is_ulid
from tests.contract.runners import sse_messages
from tests.e2e.test_http_server import V1, rpc, serving

SSE = {"Accept": "text/event-stream", **V1}


class Paced:
    """An agent that streams the chunks a test hands it, one at a time; ``None`` ends."""

    def __init__(self) -> None:
        self.chunks: asyncio.Queue[str | None] = asyncio.Queue()

    async def handler(self, text: str):
        while (chunk := await self.chunks.get()) is not None:
            yield chunk


@pytest.fixture
async def paced(tmp_path):
    agent = Paced()
    async with serving(A2A(agent=Agent(name="Paced", handler=agent.handler)).asgi_app(
            workspace=tmp_path, memory=True)) as (_, client):
        yield agent, client


def _subscription(client: httpx.AsyncClient, binding: str, task_id: str, last_event_id: str | None = None):
    headers = {**SSE, **({"Last-Event-ID": last_event_id} if last_event_id else {})}
    if binding == "jsonrpc":
        return client.stream("POST", "/a2a", json=rpc("SubscribeToTask", {"id": task_id}), headers=headers)
    return client.stream("GET", f"/tasks/{task_id}:subscribe", headers=headers)


async def _read(messages, count: int) -> list[tuple[str, dict]]:
    """(SSE id, stream item) of the next ``count`` events."""
    read = []
    for _ in range(count):
        _, event_id, data = await asyncio.wait_for(anext(messages), 5)
        body = json.loads(data)
        read.append((event_id, body.get("result", body)))
    return read


def _text(item: dict) -> str:
    return "".join(p["text"] for p in item["artifactUpdate"]["artifact"]["parts"])


async def _artifact_text(client: httpx.AsyncClient, task_id: str) -> str:
    task = (await client.post("/a2a", json=rpc("GetTask", {"id": task_id}), headers=V1)).json()["result"]
    return "".join(p["text"] for a in task.get("artifacts", []) for p in a["parts"])


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_dropped_subscription_resumes_with_nothing_lost_or_repeated(paced, binding):
    agent, client = paced
    sent = await client.post("/a2a", headers=V1, json=rpc("SendMessage", {
        "message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "go"}]},
        "configuration": {"returnImmediately": True}}))
    task_id = sent.json()["result"]["task"]["id"]

    async with _subscription(client, binding, task_id) as response:
        messages = sse_messages(response)
        (_, snapshot), = await _read(messages, 1)
        assert snapshot["task"]["id"] == task_id
        # A chunk is sent once the next one arrives (the last is marked lastChunk).
        for chunk in ("a", "b", "c"):
            await agent.chunks.put(chunk)
        before = []  # the working status may come first, if the task had not started
        while sum("artifactUpdate" in item for _, item in before) < 2:
            before += await _read(messages, 1)
    assert [_text(item) for _, item in before if "artifactUpdate" in item] == ["a", "b"]

    # Missed while disconnected: "c" goes out, and "d" waits.
    await agent.chunks.put("d")
    for _ in range(200):
        if (await _artifact_text(client, task_id)).endswith("c"):
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the agent never streamed c")

    async with _subscription(client, binding, task_id, last_event_id=before[-1][0]) as response:
        messages = sse_messages(response)
        (missed,) = await _read(messages, 1)
        assert _text(missed[1]) == "c"
        await agent.chunks.put(None)
        after = [missed, *await _read(messages, 2)]
        with pytest.raises(StopAsyncIteration):  # the stream ends with the task
            await asyncio.wait_for(anext(messages), 5)
    assert _text(after[1][1]) == "d" and after[1][1]["artifactUpdate"]["lastChunk"] is True
    assert after[2][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    ids = [event_id for event_id, _ in before + after]
    assert all(is_ulid(event_id) for event_id in ids)
    assert ids == sorted(set(ids))  # in order, none twice
    assert await _artifact_text(client, task_id) == "abcd"


async def test_a_resume_after_the_end_gets_the_end(paced):
    """The client lost the connection just before the last items: reconnecting after the
    task finished still gives them (then the stream ends), not "task is terminal"."""
    agent, client = paced
    async with client.stream("POST", "/a2a", json=rpc("SendStreamingMessage", {
            "message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "go"}]}}), headers=SSE) as response:
        messages = sse_messages(response)
        await agent.chunks.put("only")
        first = await _read(messages, 2)  # the task, then working
        await agent.chunks.put(None)
        rest = await _read(messages, 2)  # the chunk, then completed
    task_id = first[0][1]["task"]["id"]
    async with _subscription(client, "rest", task_id, last_event_id=first[-1][0]) as response:
        replayed = [(event_id, json.loads(data)) async for _, event_id, data in sse_messages(response)]
    assert replayed == rest


async def test_our_client_resumes_a_subscription(paced):
    agent, http = paced
    async with A2AClient(ServerConnectionConfig(url=str(http.base_url).rstrip("/"), token="unused")) as client:
        task = await client.send("go", blocking=False)
        async with client.subscribe(task.id) as stream:
            assert (await anext(stream)).id == task.id  # the request goes out when the stream is read
            await agent.chunks.put("a")
            await agent.chunks.put("b")
            async for item in stream:
                if isinstance(item, TaskArtifactUpdate):
                    break  # "a"; then the connection drops
            resume_from = stream.last_event_id
        assert resume_from is not None and is_ulid(resume_from)
        await agent.chunks.put(None)
        async with client.subscribe(task.id, last_event_id=resume_from) as stream:
            rest = [item async for item in stream]
    assert [p.text for i in rest if isinstance(i, TaskArtifactUpdate) for p in i.artifact.parts] == ["b"]
    assert isinstance(rest[-1], TaskStatusUpdate) and rest[-1].status.state is TaskState.COMPLETED


STREAM_STARTS = [
    pytest.param("jsonrpc", "SendStreamingMessage", id="1.0-jsonrpc"),
    pytest.param("rest", "SendStreamingMessage", id="1.0-rest"),
    pytest.param("jsonrpc", "message/stream", id="0.3-jsonrpc"),
]


def _start_stream(client: httpx.AsyncClient, binding: str, method: str, text: str):
    if method == "message/stream":
        message = {"kind": "message", "role": "user", "messageId": f"m-{text}",
                   "parts": [{"kind": "text", "text": text}]}
        return client.stream("POST", "/a2a", json=rpc(method, {"message": message}),
                             headers={"Accept": "text/event-stream", "A2A-Version": "0.3"})
    message = {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}
    if binding == "rest":
        return client.stream("POST", "/message:stream", json=message, headers=SSE)
    return client.stream("POST", "/a2a", json=rpc(method, message), headers=SSE)


@pytest.mark.parametrize(("binding", "method"), STREAM_STARTS)
async def test_a_task_goes_on_after_its_stream_drops(paced, binding, method):
    """The task's life is its own, not its stream's: a client that loses the stream
    subscribes again and follows the task to its end."""
    agent, client = paced
    async with _start_stream(client, binding, method, "go") as response:
        _, _, data = await asyncio.wait_for(anext(sse_messages(response)), 5)
        first = json.loads(data)
    first = first.get("result", first)
    task_id = first["task"]["id"] if "task" in first else first["id"]  # 1.0 wraps, 0.3 tags

    await agent.chunks.put("a")  # the agent works on after the drop
    await asyncio.sleep(0.2)
    state = (await client.post("/a2a", json=rpc("GetTask", {"id": task_id}), headers=V1)).json()["result"]["status"]
    assert state["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"), state

    async with _subscription(client, "jsonrpc", task_id) as response:
        messages = sse_messages(response)
        (_, snapshot), = await _read(messages, 1)
        assert snapshot["task"]["id"] == task_id
        await agent.chunks.put("b")
        await agent.chunks.put(None)
        items = []
        while not items or "statusUpdate" not in items[-1][1] or \
                items[-1][1]["statusUpdate"]["status"]["state"] != "TASK_STATE_COMPLETED":
            items += await _read(messages, 1)
    assert await _artifact_text(client, task_id) == "ab"
