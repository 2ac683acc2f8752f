"""The official a2a-sdk client drives our HTTP app on real uvicorn (127.0.0.1): every
standard operation over JSON-RPC and HTTP+JSON, in A2A 1.0 and, through the SDK's
compat transports, in 0.3. (The a2a-sdk 0.3.x client itself: ``test_http_sdk03.py``.)"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from cleveragents import A2A, Agent
from tests.contract.runners import UvicornServer
from tests.e2e.agents.echo_agent import echo

WAIT_SECONDS = 30


async def handler(text: str):
    """Echoes; a message starting with "wait" says so, then waits to be cancelled."""
    if text.startswith("wait"):
        yield "waiting;"
        await asyncio.sleep(WAIT_SECONDS)
    yield await echo(text)


TOKEN = "sdk-token-4d1e"


@pytest.fixture
async def server(tmp_path):
    """The agent as served by default (with a token), with push configs allowed to name
    the test's loopback webhook."""
    app = A2A(agent=Agent(name="Echo", handler=handler), description="Echoes what it is told",
              auth_token=TOKEN).asgi_app(workspace=tmp_path, memory=True, push_allowed_networks=("127.0.0.1/32",))
    server = UvicornServer(app)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http(server):
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def message(text: str, **fields) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{text}", role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)], **fields))


async def client_for(server, http, binding: str, *, streaming: bool = False, legacy: bool = False):
    if legacy:
        response = await http.get(server.url + "/.well-known/agent.json")
        card = parse_agent_card(response.json())
    else:
        card = parse_agent_card((await http.get(server.url + "/.well-known/agent-card.json")).json())
    config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding])
    client = ClientFactory(config).create(card)
    expected = {"JSONRPC": "JsonRpcTransport", "HTTP+JSON": "RestTransport"}[binding]
    assert type(client._transport).__name__ == ("Compat" + expected if legacy else expected)
    return client


async def collect(events):
    return [event async for event in events]


def text_of(task: pb.Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_send_get_list_in_1_0(server, http, binding):
    client = await client_for(server, http, binding)
    (sent,) = await collect(client.send_message(message("hello")))
    task = sent.task
    assert task.status.state == pb.TaskState.TASK_STATE_COMPLETED and text_of(task) == "hello"
    got = await client.get_task(pb.GetTaskRequest(id=task.id, history_length=1))
    assert got.id == task.id and len(got.history) == 1 and text_of(got) == "hello"
    listed = await client.list_tasks(pb.ListTasksRequest(page_size=10, include_artifacts=True))
    assert [t.id for t in listed.tasks] == [task.id] and text_of(listed.tasks[0]) == "hello"
    with pytest.raises(TaskNotFoundError):
        await client.get_task(pb.GetTaskRequest(id="no-such-task"))


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_stream_then_cancel_and_subscribe_in_1_0(server, http, binding):
    client = await client_for(server, http, binding, streaming=True)
    events = await collect(client.send_message(message("streamed")))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update" and "artifact_update" in kinds
    assert events[-1].status_update.status.state == pb.TaskState.TASK_STATE_COMPLETED
    task_id = events[0].task.id
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(pb.CancelTaskRequest(id=task_id))

    # A waiting task: subscribe from another client call, then cancel it.
    stream = client.send_message(message("wait here"))
    first = await anext(stream)
    waiting_id = first.task.id
    subscribed = client.subscribe(pb.SubscribeToTaskRequest(id=waiting_id))
    snapshot = await anext(subscribed)
    assert snapshot.task.id == waiting_id
    canceled = await client.cancel_task(pb.CancelTaskRequest(id=waiting_id))
    assert canceled.status.state == pb.TaskState.TASK_STATE_CANCELED
    rest = await asyncio.wait_for(collect(subscribed), 10)
    assert rest[-1].status_update.status.state == pb.TaskState.TASK_STATE_CANCELED
    await stream.aclose()


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_push_configs_in_1_0(server, http, binding):
    client = await client_for(server, http, binding)
    (sent,) = await collect(client.send_message(message("hello")))
    task_id = sent.task.id
    created = await client.create_task_push_notification_config(
        pb.TaskPushNotificationConfig(task_id=task_id, url="http://127.0.0.1:9/hook", token="secret"))
    assert created.task_id == task_id and created.url == "http://127.0.0.1:9/hook" and created.id
    got = await client.get_task_push_notification_config(pb.GetTaskPushNotificationConfigRequest(
        task_id=task_id, id=created.id))
    assert got == created
    listed = await client.list_task_push_notification_configs(pb.ListTaskPushNotificationConfigsRequest(task_id=task_id))
    assert list(listed.configs) == [created]
    await client.delete_task_push_notification_config(pb.DeleteTaskPushNotificationConfigRequest(
        task_id=task_id, id=created.id))
    listed = await client.list_task_push_notification_configs(pb.ListTaskPushNotificationConfigsRequest(task_id=task_id))
    assert list(listed.configs) == []


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_0_3_dialect_through_the_compat_transport(server, http, binding):
    client = await client_for(server, http, binding, legacy=True)
    (sent,) = await collect(client.send_message(message("old")))
    assert sent.task.status.state == pb.TaskState.TASK_STATE_COMPLETED and text_of(sent.task) == "old"
    got = await client.get_task(pb.GetTaskRequest(id=sent.task.id, history_length=1))
    assert got.id == sent.task.id and text_of(got) == "old" and len(got.history) == 1
    with pytest.raises(TaskNotFoundError):
        await client.get_task(pb.GetTaskRequest(id="no-such-task"))
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(pb.CancelTaskRequest(id=sent.task.id))
    created = await client.create_task_push_notification_config(
        pb.TaskPushNotificationConfig(task_id=sent.task.id, url="http://127.0.0.1:9/hook"))
    got_config = await client.get_task_push_notification_config(pb.GetTaskPushNotificationConfigRequest(
        task_id=sent.task.id, id=created.id))
    assert got_config.url == "http://127.0.0.1:9/hook" and got_config.id == created.id
    if binding == "JSONRPC":  # the SDK's 0.3 REST transport has no list or delete
        listed = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=sent.task.id))
        assert [c.id for c in listed.configs] == [created.id]
        await client.delete_task_push_notification_config(pb.DeleteTaskPushNotificationConfigRequest(
            task_id=sent.task.id, id=created.id))

    streaming = await client_for(server, http, binding, streaming=True, legacy=True)
    events = await collect(streaming.send_message(message("old stream")))
    assert events[-1].status_update.status.state == pb.TaskState.TASK_STATE_COMPLETED
    assert "old stream" in "".join(p.text for e in events for p in e.artifact_update.artifact.parts)
    stream = streaming.send_message(message("wait old"))
    waiting_id = (await anext(stream)).task.id
    resubscribed = streaming.subscribe(pb.SubscribeToTaskRequest(id=waiting_id))
    assert (await anext(resubscribed)).task.id == waiting_id
    await client.cancel_task(pb.CancelTaskRequest(id=waiting_id))
    rest = await asyncio.wait_for(collect(resubscribed), 10)
    assert rest[-1].status_update.status.state == pb.TaskState.TASK_STATE_CANCELED
    await stream.aclose()
    with pytest.raises(TaskNotFoundError):
        await collect(streaming.subscribe(pb.SubscribeToTaskRequest(id="no-such-task")))


async def test_tasks_list_in_0_3_over_raw_json_rpc(server, http):
    # The SDK's 0.3 transport has no tasks/list; the server answers it anyway.
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}}
    sent = (await http.post(server.url + "/a2a", json=body)).json()["result"]
    listed = (await http.post(server.url + "/a2a", json={"jsonrpc": "2.0", "id": 2, "method": "tasks/list",
                                                         "params": {}})).json()["result"]
    assert [t["id"] for t in listed["tasks"]] == [sent["id"]] and listed["tasks"][0]["kind"] == "task"
