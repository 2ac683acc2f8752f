"""The real a2a-sdk 0.3 gRPC client (its own venv: ``sdk03.py``) against ``agents serve
--grpc-port``, a real subprocess: it finds the gRPC interface on the 0.3 card, and
every call it makes goes to the 0.3 service (``a2a.v1.A2AService``) on the port that
serves 1.0 too; errors come as the statuses the 0.3 SDK's own server sends.

The server's actor echoes, and a message starting with "wait" keeps its task working
until it is cancelled (``tests.fakes.agents:echo_or_wait``)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from tests.e2e.grpc_server import ECHO_ACTOR_CONFIG, grpc_server
from tests.e2e.sdk03 import run_driver, sdk03  # noqa: F401 - a fixture

pytest.importorskip("grpc", reason="the grpc extra")

TOKEN = "grpc03-token-4e1a"
V03_CARD = "/.well-known/agent.json"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[SimpleNamespace]:
    workspace = tmp_path_factory.mktemp("grpc03-ws")
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text(ECHO_ACTOR_CONFIG)
    with grpc_server(workspace, "--auth-token", TOKEN, "--push-allow-network", "127.0.0.1/32") as served:
        yield served


async def test_the_0_3_card_names_the_grpc_interface(sdk03, served):  # noqa: F811
    card = await run_driver(sdk03, "card", url=served.url, card_path=V03_CARD)
    assert card["preferredTransport"] == "JSONRPC"
    assert {"url": served.target, "transport": "GRPC"} in card["additionalInterfaces"], card


async def test_every_call_of_the_0_3_grpc_client(sdk03, served):  # noqa: F811
    report = await run_driver(sdk03, "conversation", url=served.url, token=TOKEN, transport="GRPC",
                              card_path=V03_CARD)
    assert report["transport"] == "GrpcTransport"
    sent = report["send"]
    assert sent["state"] == "completed" and sent["text"] == "hello", sent
    assert report["get"] == {"id": sent["id"], "state": "completed", "history": 1, "text": "hello"}
    stream = report["stream"]
    assert stream["kinds"][0] == "Task" and stream["state"] == "completed" and stream["text"] == "streamed", stream
    assert "TaskArtifactUpdateEvent" in stream["kinds"], stream
    assert report["resubscribe"] == {"snapshot": True, "canceled": "canceled", "last": "canceled"}, report
    push = report["push"]
    assert push["created"]["taskId"] == sent["id"], push
    assert push["created"]["pushNotificationConfig"] == {"id": "hook-1", "url": "http://127.0.0.1:9/hook",
                                                         "token": "secret"}
    assert push["got"] == push["created"]
    assert report["extended_card"]["name"], report["extended_card"]
    # The 0.3 SDK's server's statuses, with "<ErrorName>: <message>" as details (what
    # the SDK's later 0.3 transport reads back into the named error).
    missing = report["get_missing"]
    assert missing["grpc_code"] == "NOT_FOUND" and missing["details"].startswith("TaskNotFoundError: "), missing
    canceled = report["cancel_completed"]
    assert canceled["grpc_code"] == "UNIMPLEMENTED", canceled
    assert canceled["details"].startswith("TaskNotCancelableError: "), canceled
    resubscribed = report["resubscribe_missing"]
    assert resubscribed["grpc_code"] == "NOT_FOUND", resubscribed


async def test_the_0_3_grpc_client_without_a_token_is_refused(sdk03, served):  # noqa: F811
    report = await run_driver(sdk03, "conversation", url=served.url, transport="GRPC", card_path=V03_CARD)
    assert report["send"]["grpc_code"] == "UNAUTHENTICATED", report["send"]
    assert report["get_missing"]["grpc_code"] == "UNAUTHENTICATED", report["get_missing"]


async def test_a_bad_resource_name_is_invalid_params_once_the_caller_is_let_in(served):
    import grpc
    from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb
    from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc

    async def get(metadata):
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = a2a_v0_3_pb2_grpc.A2AServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await stub.GetTask(pb.GetTaskRequest(name="no-tasks-prefix"), metadata=metadata)
        return failed.value

    bad = await get((("authorization", f"Bearer {TOKEN}"),))
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT and bad.details().startswith("InvalidParamsError: ")
    assert (await get(())).code() == grpc.StatusCode.UNAUTHENTICATED
