"""The official a2a-sdk gRPC client against ``agents serve --grpc-port``, a real
subprocess (one per module): every A2A 1.0 RPC, the errors as gRPC statuses with their
``google.rpc`` details, the auth and the message size limit.

The server's default actor is ``python/tests.fakes.agents:echo_or_wait``: it echoes,
and a message starting with "wait" keeps its task working until it is cancelled. It
lets in a bearer token, an API key, and OAuth2 access tokens signed by a key of a JWKS
file (``agents:read`` grants reading, ``agents:send`` sending too).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from types import SimpleNamespace

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import ClientCallContext
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from google.rpc import error_details_pb2, status_pb2

from tests.e2e.grpc_server import AGENTS, ECHO_ACTOR_CONFIG, grpc_server
from tests.oauth2_issuer import AUDIENCE, ISSUER, TOKEN_URL, Issuer

TOKEN = "grpc-token-5b2e"
API_KEY = "grpc-key-0c7d"
AUTH = ClientCallContext(service_parameters={"authorization": f"Bearer {TOKEN}"})
MAX_MESSAGE = 1024 * 1024
HOOK = "http://127.0.0.1:9/hook"


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    issuer = Issuer()
    issuer.add_key("rsa-1", "RS256")
    return issuer


@pytest.fixture(scope="module")
def served(tmp_path_factory, issuer) -> Iterator[SimpleNamespace]:
    workspace = tmp_path_factory.mktemp("grpc-ws")
    (workspace / ".cleveragents").mkdir()
    (workspace / "jwks.json").write_text(json.dumps(issuer.jwks()))
    (workspace / ".cleveragents" / "config.toml").write_text(
        ECHO_ACTOR_CONFIG + '\n'
        f'[oauth2]\nissuer = "{ISSUER}"\naudience = "{AUDIENCE}"\njwks_file = "jwks.json"\n'
        f'token_url = "{TOKEN_URL}"\n\n'
        '[oauth2.scopes]\n"agents:read" = ["read"]\n"agents:send" = ["read", "send"]\n')
    with grpc_server(workspace, "--auth-token", TOKEN, "--api-key", API_KEY, "--push-allow-network", "127.0.0.1/32",
         "--max-message-size", str(MAX_MESSAGE)) as served:
        yield served


async def card_of(served) -> pb.AgentCard:
    async with httpx.AsyncClient(timeout=10) as http:
        return parse_agent_card((await http.get(served.url + "/.well-known/agent-card.json")).json())


async def client_for(served, *, streaming: bool = False):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=["GRPC"],
                          grpc_channel_factory=grpc.aio.insecure_channel)
    client = ClientFactory(config).create(await card_of(served))
    assert type(client._transport).__name__ == "GrpcTransport"
    return client


def message(text: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{text[:20]}", role=pb.Role.ROLE_USER, parts=[pb.Part(text=text)]))


async def collect(events):
    return [event async for event in events]


def text_of(task: pb.Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


async def raw_call(served, rpc: str, request, metadata=(("authorization", f"Bearer {TOKEN}"),)):
    """One call through the generated stub: the AioRpcError it fails with."""
    async with grpc.aio.insecure_channel(served.target) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await getattr(a2a_pb2_grpc.A2AServiceStub(channel), rpc)(request, metadata=metadata)
    return failed.value


def details_of(error: grpc.aio.AioRpcError) -> tuple[status_pb2.Status, list]:
    raw = dict(error.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    found = []
    for detail in status.details:
        for kind in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
            if detail.Is(kind.DESCRIPTOR):
                value = kind()
                detail.Unpack(value)
                found.append(value)
    return status, found


async def test_the_card_names_the_grpc_interface(served):
    card = await card_of(served)
    grpc_interfaces = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    # One port, both versions' services: lf.a2a.v1's and 0.3's a2a.v1.
    assert [(i.url, i.protocol_version) for i in grpc_interfaces] == [(served.target, "1.0"), (served.target, "0.3")]


async def test_send_get_and_list(served):
    client = await client_for(served)
    (sent,) = await collect(client.send_message(message("hello"), context=AUTH))
    task = sent.task
    assert task.status.state == pb.TaskState.TASK_STATE_COMPLETED and text_of(task) == "hello"
    got = await client.get_task(pb.GetTaskRequest(id=task.id, history_length=1), context=AUTH)
    assert got.id == task.id and len(got.history) == 1 and text_of(got) == "hello"
    listed = await client.list_tasks(pb.ListTasksRequest(page_size=50, include_artifacts=True), context=AUTH)
    assert task.id in [t.id for t in listed.tasks]
    assert text_of(next(t for t in listed.tasks if t.id == task.id)) == "hello"


async def test_stream_then_subscribe_and_cancel(served):
    client = await client_for(served, streaming=True)
    events = await collect(client.send_message(message("streamed"), context=AUTH))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update" and "artifact_update" in kinds
    assert events[-1].status_update.status.state == pb.TaskState.TASK_STATE_COMPLETED

    stream = client.send_message(message("wait here"), context=AUTH)
    waiting_id = (await anext(stream)).task.id
    subscribed = client.subscribe(pb.SubscribeToTaskRequest(id=waiting_id), context=AUTH)
    assert (await anext(subscribed)).task.id == waiting_id
    canceled = await client.cancel_task(pb.CancelTaskRequest(id=waiting_id), context=AUTH)
    assert canceled.status.state == pb.TaskState.TASK_STATE_CANCELED
    rest = await asyncio.wait_for(collect(subscribed), 10)
    assert rest[-1].status_update.status.state == pb.TaskState.TASK_STATE_CANCELED
    await stream.aclose()


async def test_a_dropped_stream_leaves_its_task_running(served):
    client = await client_for(served, streaming=True)
    stream = client.send_message(message("wait and drop"), context=AUTH)
    waiting_id = (await anext(stream)).task.id
    await stream.aclose()
    await asyncio.sleep(0.3)
    got = await client.get_task(pb.GetTaskRequest(id=waiting_id), context=AUTH)
    assert got.status.state == pb.TaskState.TASK_STATE_WORKING
    await client.cancel_task(pb.CancelTaskRequest(id=waiting_id), context=AUTH)


async def test_push_configs(served):
    client = await client_for(served)
    (sent,) = await collect(client.send_message(message("hello push"), context=AUTH))
    task_id = sent.task.id
    created = await client.create_task_push_notification_config(
        pb.TaskPushNotificationConfig(task_id=task_id, url=HOOK, token="secret"), context=AUTH)
    assert created.task_id == task_id and created.url == HOOK and created.id
    got = await client.get_task_push_notification_config(
        pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id), context=AUTH)
    assert got == created
    listed = await client.list_task_push_notification_configs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id), context=AUTH)
    assert list(listed.configs) == [created]
    await client.delete_task_push_notification_config(
        pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=created.id), context=AUTH)
    listed = await client.list_task_push_notification_configs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id), context=AUTH)
    assert list(listed.configs) == []


async def test_the_extended_card(served):
    client = await client_for(served)
    public = await card_of(served)
    extended = await client.get_extended_agent_card(pb.GetExtendedAgentCardRequest(), context=AUTH)
    assert extended.name == public.name and len(extended.skills) > len(public.skills)
    assert served.target in [i.url for i in extended.supported_interfaces]


async def test_errors_are_statuses_with_error_info(served):
    client = await client_for(served)
    with pytest.raises(TaskNotFoundError):
        await client.get_task(pb.GetTaskRequest(id="no-such-task"), context=AUTH)
    error = await raw_call(served, "GetTask", pb.GetTaskRequest(id="no-such-task"))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    status, (info,) = details_of(error)
    assert status.code == grpc.StatusCode.NOT_FOUND.value[0]
    assert (info.reason, info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")

    (sent,) = await collect(client.send_message(message("done"), context=AUTH))
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(pb.CancelTaskRequest(id=sent.task.id), context=AUTH)
    error = await raw_call(served, "CancelTask", pb.CancelTaskRequest(id=sent.task.id))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert details_of(error)[1][0].reason == "TASK_NOT_CANCELABLE"


async def test_bad_params_name_the_field(served):
    error = await raw_call(served, "SendMessage", pb.SendMessageRequest())
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    info, bad_request = details_of(error)[1]
    assert info.reason == "INVALID_PARAMS"
    assert "message" in [violation.field for violation in bad_request.field_violations]


@pytest.mark.parametrize("metadata", [(), (("authorization", "Bearer wrong-token"),)], ids=["none", "wrong"])
async def test_calls_without_the_token_are_refused(served, metadata):
    error = await raw_call(served, "GetTask", pb.GetTaskRequest(id="anything"), metadata=metadata)
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert details_of(error)[1][0].reason == "UNAUTHENTICATED"
    assert "Bearer" in dict(error.trailing_metadata())["www-authenticate"]
    client = await client_for(served, streaming=True)
    with pytest.raises(Exception) as refused:
        await collect(client.send_message(message("no entry")))
    assert refused.value.__cause__.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_an_api_key_in_metadata_lets_a_caller_in(served):
    error = await raw_call(served, "GetTask", pb.GetTaskRequest(id="no-such-task"), metadata=(("x-api-key", API_KEY),))
    assert error.code() == grpc.StatusCode.NOT_FOUND  # in, and answered


async def test_oauth2_scopes_decide_what_a_token_may_call(served, issuer):
    reader = (("authorization", f"Bearer {issuer.mint(scope='agents:read')}"),)
    error = await raw_call(served, "GetTask", pb.GetTaskRequest(id="no-such-task"), metadata=reader)
    assert error.code() == grpc.StatusCode.NOT_FOUND  # reading is granted
    error = await raw_call(served, "SendMessage", message("not allowed"), metadata=reader)
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    (info,) = details_of(error)[1]
    assert info.reason == "PERMISSION_DENIED" and json.loads(info.metadata["required_scopes"]) == ["agents:send"]
    assert 'error="insufficient_scope"' in dict(error.trailing_metadata())["www-authenticate"]

    sender = ClientCallContext(service_parameters={"authorization": f"Bearer {issuer.mint(scope='agents:send')}"})
    client = await client_for(served)
    (sent,) = await collect(client.send_message(message("scoped"), context=sender))
    assert sent.task.status.state == pb.TaskState.TASK_STATE_COMPLETED

    expired = (("authorization", f"Bearer {issuer.mint(exp=1)}"),)
    error = await raw_call(served, "GetTask", pb.GetTaskRequest(id="x"), metadata=expired)
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert 'error="invalid_token"' in dict(error.trailing_metadata())["www-authenticate"]


async def test_a_message_over_the_size_limit_is_refused(served):
    error = await raw_call(served, "SendMessage", message("x" * (MAX_MESSAGE + 1)))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_grpc_port_in_use_is_refused_before_serving(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([str(AGENTS), "serve", "--grpc-port", str(port), "--port", "0", "--memory",
                               "--no-auth", "--workspace", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"agents serve: cannot listen for gRPC on 127.0.0.1:{port}: Address already in use"


async def test_service_parameters_travel_as_metadata(served):
    auth = ("authorization", f"Bearer {TOKEN}")
    error = await raw_call(served, "GetTask", pb.GetTaskRequest(id="t"), metadata=(auth, ("a2a-version", "9.9")))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert details_of(error)[1][0].reason == "VERSION_NOT_SUPPORTED"

    extension = "urn:cleveragents:extensions:v1"
    async with grpc.aio.insecure_channel(served.target) as channel:
        call = a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(
            message("with extension"), metadata=(auth, ("a2a-version", "1.0"), ("a2a-extensions", extension)))
        sent = await call
        assert sent.task.status.state == pb.TaskState.TASK_STATE_COMPLETED
        assert dict(await call.initial_metadata())["a2a-extensions"] == extension
