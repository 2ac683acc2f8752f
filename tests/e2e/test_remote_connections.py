"""An ``a2a/<url>`` actor's turns share their connection to the agent: a connection
made for one turn serves the next, where each turn used to open its own (and, on a
real network, shake hands for TLS again)."""

from __future__ import annotations

import asyncio
from typing import Any

from cleveragents.config import Settings
from tests.contract.runners import UvicornServer
from tests.in_process import in_process


async def test_turns_to_a_remote_agent_share_one_connection(tmp_path, workspace):
    from cleveragents.transports.http.app import build_app

    real = build_app(settings=Settings(workspace=tmp_path, memory=True))
    connections: set[tuple[str, int]] = set()

    async def agent(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            connections.add(tuple(scope["client"]))
        await real(scope, receive, send)

    async with UvicornServer(agent) as url, in_process(workspace) as call:
        session = (await call("session.create", {"actor_name": f"a2a/{url}"}))["result"]["session_id"]
        for n in range(3):
            message = {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": f"m{n}", "contextId": session}
            task = (await call("SendMessage", {"message": message}))["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
            # A user's pause: the answer comes as the task completes, and the turn
            # gives its connection back just after.
            await asyncio.sleep(0.2)
    assert len(connections) == 1, connections
