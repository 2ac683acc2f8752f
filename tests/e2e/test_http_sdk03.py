"""The real a2a-sdk 0.3 client (its own venv: ``sdk03.py``) against our HTTP app on real
uvicorn, over JSON-RPC and HTTP+JSON: the card it finds at the 0.3 location, every
call it makes, and the errors it reads, a stream's included."""

from __future__ import annotations

import asyncio

import pytest

from cleveragents import A2A, Agent
from tests.contract.runners import UvicornServer
from tests.e2e.agents.echo_agent import echo
from tests.e2e.sdk03 import run_driver, sdk03  # noqa: F401 - a fixture

TOKEN = "sdk03-token-81c2"
WAIT_SECONDS = 30


async def handler(text: str):
    """Echoes; a message starting with "wait" says so, then waits to be cancelled."""
    if text.startswith("wait"):
        yield "waiting;"
        await asyncio.sleep(WAIT_SECONDS)
    yield await echo(text)


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
    assert card["streaming"] is True and card["extendedCard"] is True and card["securitySchemes"] == ["bearer"]
