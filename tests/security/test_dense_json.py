"""JSON dense with values, from a caller or from a remote agent.

Parsing makes a Python object of every value, and a small text can hold very many:
``[{},{},...]`` takes about 25 bytes of memory for each byte of text, so one request of
12 MiB would take 300 MiB, and a remote agent's answer of 64 MiB over 1.5 GiB, before
anything looks at them. A text whose values would take more than ``MAX_PARSE_COST``
is refused unparsed; the count runs at C speed over texts long enough to matter, and
long text that is mostly strings is served as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_bounded_input import TRANSPORTS, assert_served, serving, v1_message, workspace_of

DENSE = b"[" + b"{}," * (4 * 2**20) + b"{}]"  # 12 MiB of empty objects
TEXT = "int main(void) { return f(a, b[1]); }\n" * (12 * 2**20 // 38)  # 12 MiB of code


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    assert match is not None, status
    return int(match[1]) / 1024


def pid_of(server: Any) -> int:
    return int(server.process.pid if hasattr(server, "process") else server.server.proc.pid)


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_a_request_dense_with_values_is_refused_unparsed(identity, kind, tmp_path):
    workspace = workspace_of(identity)
    async with serving(kind, identity, workspace, tmp_path / "server.log") as server:
        assert_served(await server.call("_cleveragents/health/check", {}), "health")
        before = peak_rss_mib(pid_of(server))
        body = (b'{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":'
                + json.dumps(v1_message(metadata={"x": 0})).encode()[:-3] + DENSE + b"}}}}")
        answer = await server.raw(body)
        grown = peak_rss_mib(pid_of(server)) - before
        assert answer["error"]["code"] == -32700, str(answer)[:300]
        assert answer["error"]["data"]["reason"] == "too many values", answer["error"]
        assert grown < 150, f"the server's peak memory grew by {grown:.0f} MiB"
        message = {**v1_message(), "parts": [{"text": TEXT}]}
        sent = assert_served(await server.call("SendMessage", {"message": message}), "long text")
        assert sent["task"]["history"][0]["parts"][0]["text"] == TEXT


@asynccontextmanager
async def agent_answering(body: bytes, streamed: bool = False) -> AsyncIterator[str]:
    """An agent whose card names its JSON-RPC interface, and which answers every call
    with ``body`` (as one SSE event when ``streamed``); yields its URL."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from tests.contract.runners import UvicornServer

    card = {"name": "answering", "description": "answers what the test says", "version": "1",
            "supportedInterfaces": [{"url": "/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}

    async def read_card(request: Any) -> Response:
        return JSONResponse(card)

    async def call(request: Any) -> Response:
        if streamed:
            return Response(b"data: " + body + b"\n\n", media_type="text/event-stream")
        return Response(body, media_type="application/json")

    app = Starlette(routes=[Route("/.well-known/{name}", read_card), Route("/a2a", call, methods=["POST"])])
    async with UvicornServer(app) as url:
        yield url


@pytest.mark.parametrize("where", ["answer", "stream"])
async def test_a_remote_agent_answering_dense_json_is_refused_unparsed(where):
    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.errors import InvalidAgentResponseError

    dense = b'{"jsonrpc":"2.0","id":1,"result":' + DENSE + b"}"
    async with agent_answering(dense, streamed=where == "stream") as url:
        async with A2AClient(ServerConnectionConfig(url=url, timeout_seconds=30)) as client:
            with pytest.raises(InvalidAgentResponseError, match="too many values") as caught:
                if where == "stream":
                    async with client.stream("hi") as items:
                        [item async for item in items]
                else:
                    await client.send("hi")
    assert caught.value.data["limit"] > 0, caught.value.data
