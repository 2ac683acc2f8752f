"""The client's MCP servers (``mcpServers`` of session/new) over ACP: started with the
official ``mcp`` SDK, their tools offered to the session's actor, stopped with it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from acp import RequestError, schema

from tests.e2e.agent_client.acp_client import agent, text

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py"
CALLER = '[defaults]\ndefault_actor = "python/tests.fakes.agents:tool_caller"\n'


def calc(name: str = "calc", command: str = sys.executable) -> schema.McpServerStdio:
    return schema.McpServerStdio(name=name, command=command, args=[str(SERVER)],
                                 env=[schema.EnvVariable(name="GREETING", value="hello from the client")])


def caller(workspace: Path) -> Path:
    (workspace / ".cleveragents").mkdir(exist_ok=True)
    (workspace / ".cleveragents" / "config.toml").write_text(CALLER)
    return workspace


async def test_the_actor_lists_and_calls_the_clients_mcp_tools(workspace):
    async with agent(caller(workspace)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[calc()])
        await conn.prompt(session_id=session.session_id, prompt=text("tools"))
        names = recorder.texts()[-1].split()
        assert {"mcp.calc.add", "mcp.calc.env", "fs.read"} <= set(names)
        await conn.prompt(session_id=session.session_id, prompt=text("mcp.calc.add a=2 b=40"))
        assert recorder.texts()[-1] == "mcp.calc.add -> 42"
        await conn.prompt(session_id=session.session_id, prompt=text("mcp.calc.env name=GREETING"))
        assert recorder.texts()[-1] == "mcp.calc.env -> hello from the client"

        plain = await conn.new_session(cwd=str(workspace), mcp_servers=[])  # another session: not its tools
        await conn.prompt(session_id=plain.session_id, prompt=text("tools"))
        assert not any(n.startswith("mcp.") for n in recorder.texts()[-1].split())


async def test_the_servers_come_back_with_a_loaded_session_and_end_with_close(workspace):
    async with agent(caller(workspace)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    async with agent(workspace) as (conn, recorder):
        await conn.load_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[calc("math")])
        await conn.prompt(session_id=session.session_id, prompt=text("mcp.math.add a=1 b=1"))
        assert recorder.texts()[-1] == "mcp.math.add -> 2"
        await conn.close_session(session_id=session.session_id)
        await conn.resume_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError):  # no server now: the tool is not there
            await conn.prompt(session_id=session.session_id, prompt=text("mcp.math.add a=1 b=1"))


async def test_a_server_writing_much_to_stderr_is_not_held_up_by_a_client_that_never_reads_it(workspace):
    """The SDK's client pipes the agent's stderr and never reads it: a server's logs,
    past what the pipe holds, must not block the server and its tool calls."""
    async with agent(caller(workspace)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[calc()])
        for _ in range(3):
            await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                               prompt=text("mcp.calc.chatter size=300000")), 20)
            assert recorder.texts()[-1] == "mcp.calc.chatter -> said"


async def test_a_server_that_does_not_start_is_a_clear_error(workspace):
    async with agent(caller(workspace)) as (conn, recorder):
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(workspace), mcp_servers=[calc("broken", str(workspace / "no-such"))])
        assert refused.value.code == -32602
        assert refused.value.data["field"] == "mcpServers[0]" and refused.value.data["name"] == "broken"
        assert (await conn.list_sessions()).sessions == []  # nothing was stored
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as refused:
            await conn.fork_session(session_id=session.session_id, cwd=str(workspace),
                                    mcp_servers=[calc("broken", str(workspace / "no-such"))])
        assert refused.value.code == -32602
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [session.session_id]
