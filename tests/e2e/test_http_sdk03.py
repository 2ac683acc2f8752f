"""The real a2a-sdk 0.3 client (its own venv: ``sdk03.py``) against our HTTP app on real
uvicorn, over JSON-RPC and HTTP+JSON: the card it finds at the 0.3 location, every
call it makes, and the errors it reads, a stream's included."""

from __future__ import annotations

import pytest

from cleveragents import A2A, Agent
from tests.contract.runners import UvicornServer
from tests.e2e.sdk03 import run_driver, sdk03  # noqa: F401 - a fixture
from tests.e2e.test_http_sdk import handler

TOKEN = "sdk03-token-81c2"
@pytest.fixture(params=["", "/api"], ids=["root", "prefix"])
async def server(request, tmp_path):
    app = A2A(agent=Agent(name="Echo", handler=handler), description="Echoes what it is told", auth_token=TOKEN,
              prefix=request.param).asgi_app(workspace=tmp_path, memory=True, push_allowed_networks=("127.0.0.1/32",))
    server = UvicornServer(app)
    await server.start()
    server.prefix = request.param
    yield server
    await server.stop()


async def test_the_0_3_client_reads_the_card_at_its_own_location(sdk03, server):  # noqa: F811
    card = await run_driver(sdk03, "card", url=server.url + server.prefix, token=TOKEN)
    jsonrpc = server.url + server.prefix + "/a2a"
    assert card["url"] == jsonrpc and card["preferredTransport"] == "JSONRPC"
    assert card["protocolVersion"].startswith("0.3")
    # Each interface once; the main one is the card's url, not repeated beside it.
    assert card["additionalInterfaces"] == [{"url": server.url + server.prefix, "transport": "HTTP+JSON"}]
    assert card["streaming"] is True and card["extendedCard"] is True and card["securitySchemes"] == ["bearerAuth"]


@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON"])
async def test_every_call_of_the_0_3_client(sdk03, server, transport):  # noqa: F811
    report = await run_driver(sdk03, "conversation", url=server.url + server.prefix, token=TOKEN, transport=transport)
    assert report["transport"] == {"JSONRPC": "JsonRpcTransport", "HTTP+JSON": "RestTransport"}[transport]
    sent = report["send"]
    assert sent["state"] == "completed" and sent["text"] == "hello", sent
    assert report["get"] == {"id": sent["id"], "state": "completed", "history": 1, "text": "hello"}
    assert report["stream"]["kinds"][0] == "Task" and report["stream"]["state"] == "completed", report["stream"]
    assert "TaskArtifactUpdateEvent" in report["stream"]["kinds"] and report["stream"]["text"] == "streamed"
    assert report["resubscribe"] == {"snapshot": True, "canceled": "canceled", "last": "canceled"}, report["resubscribe"]
    push = report["push"]
    assert push["created"]["taskId"] == sent["id"], push
    assert push["created"]["pushNotificationConfig"] == {"id": "hook-1", "url": "http://127.0.0.1:9/hook",
                                                         "token": "secret"}
    assert push["got"] == push["created"]
    assert report["extended_card"]["name"] == "Echo", report["extended_card"]
    if transport == "JSONRPC":
        # JSON-RPC errors keep their codes, a stream's inside the event stream.
        assert report["get_missing"]["error"] == "A2AClientJSONRPCError" and report["get_missing"]["code"] == -32001
        assert report["cancel_completed"]["code"] == -32002, report["cancel_completed"]
        assert report["resubscribe_missing"]["error"] == "A2AClientJSONRPCError", report["resubscribe_missing"]
        assert report["resubscribe_missing"]["code"] == -32001
    else:
        # The 0.3 REST client reads an HTTP status.
        assert report["get_missing"]["status"] == 404, report["get_missing"]
        assert report["cancel_completed"]["error"] == "A2AClientHTTPError", report["cancel_completed"]
        assert report["cancel_completed"]["status"] in (400, 409)
        assert report["resubscribe_missing"]["error"] == "A2AClientHTTPError", report["resubscribe_missing"]
