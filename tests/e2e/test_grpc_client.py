"""Our outbound client (``cleveragents.a2a.client.A2AClient``) over gRPC, against a
stock a2a-sdk gRPC server run as a subprocess (``sdk_grpc_server.py``; one per module),
whose card offers only the gRPC interface."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from cleveragents.a2a.client import A2AClient, A2AClientError, A2ARemoteError, ServerConnectionConfig
from cleveragents.domain.errors import AuthenticationError, TaskNotCancelableError, TaskNotFoundError
from cleveragents.domain.task import PushConfig, Task, TaskArtifactUpdate, TaskState, TaskStatusUpdate
from tests.conftest import REPO
from tests.listening import listening

TOKEN = "grpc-client-token-93ad"
HOOK = "http://127.0.0.1:9/hook"


@pytest.fixture(scope="module")
def served() -> Iterator[SimpleNamespace]:
    with listening([sys.executable, "-m", "tests.e2e.sdk_grpc_server", TOKEN], cwd=REPO) as served:
        _, _, url, _, target = served.line.split()
        yield SimpleNamespace(url=url, target=target)


@pytest.fixture
async def client(served) -> A2AClient:
    async with A2AClient(ServerConnectionConfig(url=served.url, token=TOKEN, timeout_seconds=10)) as client:
        yield client


def text(task: Task) -> str:
    return "".join(p.text or "" for a in task.artifacts for p in a.parts)


async def test_the_grpc_interface_is_chosen_from_the_card(client, served):
    assert (client.interface.binding, client.interface.url, client.interface.version) == ("GRPC", served.target, "1.0")


async def test_send_get_and_list(client):
    task = await client.send("hello", history_length=1)
    assert isinstance(task, Task) and task.state is TaskState.COMPLETED and text(task) == "remote: hello"
    again = await client.get(task.id)
    assert again.id == task.id and text(again) == "remote: hello"
    page = await client.list(page_size=100)
    assert task.id in [t.id for t in page.tasks]


async def test_a_grpc_interface_on_another_host_is_dialled_at_the_address_checked(served):
    """The card names ``localhost``, not the card's own host: the client resolves and
    checks it (``client_reach.py``), then dials the address it checked, naming the
    host to the peer."""
    import httpx

    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{served.url}/.well-known/agent-card.json")).json()
    for interface in card["supportedInterfaces"]:
        interface["url"] = interface["url"].replace("127.0.0.1", "localhost")
    assert "localhost:" in str(card["supportedInterfaces"])
    config = ServerConnectionConfig(url=served.url, token=TOKEN, timeout_seconds=10)
    async with A2AClient(config, card=card) as client:
        task = await client.send("hello")
    assert task.state is TaskState.COMPLETED and text(task) == "remote: hello"


async def test_stream_yields_the_task_then_its_updates(client):
    async with client.stream("chunks") as stream:
        items = [item async for item in stream]
    assert isinstance(items[0], Task)
    chunks = [i.artifact.parts[0].text for i in items if isinstance(i, TaskArtifactUpdate)]
    assert chunks == ["remote: ", "chunks"]
    assert isinstance(items[-1], TaskStatusUpdate) and items[-1].status.state is TaskState.COMPLETED


async def test_subscribe_then_cancel_a_working_task(client):
    task = await client.send("wait", blocking=False)
    async with client.subscribe(task.id) as stream:
        first = await anext(stream)
        assert isinstance(first, Task) and first.id == task.id
        canceled = await client.cancel(task.id)
        assert canceled.state is TaskState.CANCELED
        rest = [item async for item in stream]
    assert [i.status.state for i in rest if isinstance(i, TaskStatusUpdate)][-1] is TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError) as caught:
        await client.cancel(task.id)
    assert caught.value.reason == "TASK_NOT_CANCELABLE"


async def test_push_config_create_get_list_delete(client):
    task = await client.send("push")
    made = await client.create_push_config(PushConfig(id="hook-1", task_id=task.id, url=HOOK, token="tk"))
    assert (made.id, made.task_id, made.url) == ("hook-1", task.id, HOOK)
    assert (await client.get_push_config(task.id, "hook-1")).url == HOOK
    assert [c.id for c in await client.list_push_configs(task.id)] == ["hook-1"]
    await client.delete_push_config(task.id, "hook-1")
    assert await client.list_push_configs(task.id) == []


async def test_the_extended_card(client):
    extended = await client.extended_card()
    assert "secret" in [s["id"] for s in extended["skills"]]


async def test_errors_keep_their_a2a_kind(client, served):
    with pytest.raises(TaskNotFoundError) as caught:
        await client.get("no-such-task")
    error = caught.value
    assert isinstance(error, A2ARemoteError) and error.code == -32001 and error.reason == "TASK_NOT_FOUND"
    assert served.target in str(error)


async def test_a_wrong_token_is_an_authentication_error(served):
    async with A2AClient(ServerConnectionConfig(url=served.url, token="wrong")) as stranger:
        with pytest.raises(AuthenticationError):
            await stranger.send("hi")
        with pytest.raises(AuthenticationError):
            async with stranger.stream("hi") as stream:
                [item async for item in stream]


async def test_a_method_without_a_grpc_form_says_so(client):
    with pytest.raises(A2AClientError, match="no gRPC form"):
        await client.call("_cleveragents/health/check")
