"""A whole ACP session with the official Python client against a real server process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError, image_block

from tests.e2e.agent_client.acp_client import agent, text

SLOW_ACTOR = 'default_actor = "python/tests.fakes.agents:slow_words"\n'


def with_actor(workspace: Path, line: str) -> Path:
    (workspace / ".cleveragents").mkdir(exist_ok=True)
    (workspace / ".cleveragents" / "config.toml").write_text("[defaults]\n" + line)
    return workspace


async def test_initialize_declares_what_is_served(workspace):
    async with agent(workspace) as (conn, recorder):
        pass
    assert recorder.checked == 1  # the initialize answer, checked against the schema


async def test_a_prompt_streams_its_reply_as_chunks_and_ends_the_turn(workspace):
    async with agent(with_actor(workspace, SLOW_ACTOR)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes.current_mode_id == "supervised"
        assert [m.id for m in session.modes.available_modes] == ["manual", "supervised", "autonomous"]
        answer = await conn.prompt(session_id=session.session_id, prompt=text("one two three"))
        assert answer.stop_reason == "end_turn"
        assert recorder.texts() == ["one ", "two ", "three "]


async def test_the_local_actor_runs_a_read_only_tool(workspace):
    (workspace / "notes.txt").write_text("a TODO here\n")
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=text("fs.search TODO"))
        assert answer.stop_reason == "end_turn"
        assert "notes.txt" in "".join(recorder.texts())


async def test_cancel_ends_the_turn_as_cancelled_and_the_session_goes_on(workspace):
    async with agent(with_actor(workspace, SLOW_ACTOR)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                   prompt=text(" ".join(f"w{n}" for n in range(40)))))
        while not recorder.texts():
            await asyncio.sleep(0.02)
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(prompt, 10)
        assert answer.stop_reason == "cancelled"
        assert 1 <= len(recorder.texts()) < 40
        recorder.updates.clear()
        answer = await conn.prompt(session_id=session.session_id, prompt=text("again"))
        assert answer.stop_reason == "end_turn" and recorder.texts() == ["again "]


async def test_a_second_prompt_while_one_runs_is_refused(workspace):
    async with agent(with_actor(workspace, SLOW_ACTOR)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        first = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=text("a b c d")))
        while not recorder.texts():
            await asyncio.sleep(0.02)
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=text("x"))
        assert refused.value.code == -32600 and refused.value.data["reason"] == "prompt_running"
        assert (await first).stop_reason == "end_turn"


async def test_load_after_a_restart_replays_the_history(workspace):
    async with agent(with_actor(workspace, SLOW_ACTOR)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("first turn"))
        await conn.prompt(session_id=session.session_id, prompt=text("second turn"))
    async with agent(workspace) as (conn, recorder):  # a new process, the same SQLite store
        loaded = await conn.load_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[])
        assert loaded.modes.current_mode_id == "supervised"
        replay = [(u.session_update, u.content.text) for _, u in recorder.updates]
        assert replay == [("user_message_chunk", "first turn"), ("agent_message_chunk", "first turn "),
                          ("user_message_chunk", "second turn"), ("agent_message_chunk", "second turn ")]
        answer = await conn.prompt(session_id=session.session_id, prompt=text("third"))
        assert answer.stop_reason == "end_turn"


async def test_load_of_an_unknown_session_is_resource_not_found(workspace):
    async with agent(workspace) as (conn, recorder):
        with pytest.raises(RequestError) as refused:
            await conn.load_session(session_id="no-such-session", cwd=str(workspace), mcp_servers=[])
        assert refused.value.code == -32002


async def test_a_mode_change_is_announced_and_checked(workspace):
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
        await asyncio.sleep(0.2)
        modes = [u.current_mode_id for _, u in recorder.updates if u.session_update == "current_mode_update"]
        assert modes == ["autonomous"]
        with pytest.raises(RequestError) as refused:
            await conn.set_session_mode(session_id=session.session_id, mode_id="reckless")
        assert refused.value.code == -32602 and refused.value.data["available"] == ["manual", "supervised", "autonomous"]


async def test_bad_requests_get_clear_errors(workspace, tmp_path):
    async with agent(workspace) as (conn, recorder):
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id="unknown", prompt=text("hi"))
        assert refused.value.code == -32602 and refused.value.data["field"] == "sessionId"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=[image_block("aGk=", "image/png")])
        assert refused.value.code == -32602 and refused.value.data["field"] == "prompt[0]"
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(elsewhere), mcp_servers=[])
        assert refused.value.code == -32602 and refused.value.data["workspace"] == str(workspace.resolve())
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert refused.value.code == -32602
