"""A session's config options over ACP with the official Python client, against the
real server: ``configOptions`` in every answer that opens a session,
``session/set_config_option``, and the updates that keep it in step with
``session/set_mode``."""

from __future__ import annotations

import asyncio

import pytest
from acp import RequestError

from tests.e2e.agent_client.acp_client import Recorder, agent, delete_session, text

MODES = ["manual", "supervised", "autonomous"]


def mode_option(options):
    (option,) = options
    assert option.id == "mode" and option.category == "mode" and option.type == "select"
    assert [choice.value for choice in option.options] == MODES
    return option.current_value


def announced(recorder: Recorder, kind: str) -> list:
    return [u for _, u in recorder.updates if u.session_update == kind]


async def test_the_mode_is_a_config_option_kept_across_restarts(workspace):
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        assert mode_option(session.config_options) == "supervised" == session.modes.current_mode_id
        answer = await conn.set_config_option(config_id="mode", session_id=sid, value="manual")
        assert mode_option(answer.config_options) == "manual"
        # A client that follows the modes sees the change too; the answer carries the options.
        assert [u.current_mode_id for u in announced(recorder, "current_mode_update")] == ["manual"]
        assert announced(recorder, "config_option_update") == []
        await conn.set_session_mode(session_id=sid, mode_id="autonomous")  # set another way: announced
        (update,) = announced(recorder, "config_option_update")
        assert mode_option(update.config_options) == "autonomous"
        fork = await conn.fork_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        assert mode_option(fork.config_options) == "autonomous"
    async with agent(workspace) as (conn, recorder):  # a new process, the same store
        loaded = await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        assert mode_option(loaded.config_options) == "autonomous" == loaded.modes.current_mode_id
        await conn.set_config_option(config_id="mode", session_id=sid, value="supervised")
    async with agent(workspace) as (conn, recorder):
        resumed = await conn.resume_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        assert mode_option(resumed.config_options) == "supervised"


@pytest.mark.parametrize(("config_id", "value", "field"), [
    ("model", "supervised", "configId"),
    ("mode", "reckless", "value"),
    ("mode", True, "value"),  # a boolean for a select option
])
async def test_a_bad_option_or_value_is_refused(workspace, config_id, value, field):
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id=config_id, session_id=session.session_id, value=value)
        assert refused.value.code == -32602 and refused.value.data["field"] == field
        expected = ["mode"] if field == "configId" else MODES
        assert refused.value.data["available"] == expected
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id="mode", session_id="no-such-session", value="manual")
        assert refused.value.code == -32602 and refused.value.data["field"] == "sessionId"
        assert announced(recorder, "current_mode_update") == []


async def test_a_forks_actor_goes_on_from_its_parents_conversation(workspace):
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text(
        '[defaults]\ndefault_actor = "python/tests.fakes.agents:recall"\n')
    async with agent(workspace) as (conn, recorder):
        parent = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        for said in ("alpha", "beta"):
            await conn.prompt(session_id=parent, prompt=text(said))
        fork = (await conn.fork_session(session_id=parent, cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=parent, prompt=text("gamma"))  # after the fork: the parent's own
        await conn.prompt(session_id=fork, prompt=text("delta"))
        assert recorder.texts(session_id=fork) == ["recalls: alpha | beta"]
        assert recorder.texts(session_id=parent)[-1] == "recalls: alpha | beta"
    async with agent(workspace) as (conn, recorder):  # the link is in the store
        await conn.resume_session(session_id=fork, cwd=str(workspace), mcp_servers=[])
        grandchild = (await conn.fork_session(session_id=fork, cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=grandchild, prompt=text("epsilon"))
        assert recorder.texts(session_id=grandchild) == ["recalls: alpha | beta | delta"]


async def test_delete_ends_the_session_and_forgets_its_conversation(workspace):
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text(
        '[defaults]\ndefault_actor = "python/tests.fakes.agents:slow_words"\n')
    async with agent(workspace) as (conn, recorder):
        kept = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=kept, prompt=text("kept turn"))
        gone = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=gone, prompt=text("/actions"))
        running = asyncio.ensure_future(conn.prompt(session_id=gone, prompt=text(" ".join(["w"] * 40))))
        while not recorder.texts(session_id=gone)[1:]:
            await asyncio.sleep(0.02)
        await delete_session(conn, gone)  # its running turn ends first
        assert (await asyncio.wait_for(running, 10)).stop_reason == "cancelled"
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [kept]
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=gone, prompt=text("after delete"))
        assert refused.value.code == -32602
        with pytest.raises(RequestError) as refused:
            await delete_session(conn, gone)
        assert refused.value.code == -32002 and refused.value.data == {"sessionId": gone}
    async with agent(workspace) as (conn, recorder):  # gone from the store, not only from the process
        with pytest.raises(RequestError) as refused:
            await conn.load_session(session_id=gone, cwd=str(workspace), mcp_servers=[])
        assert refused.value.code == -32002
        await conn.load_session(session_id=kept, cwd=str(workspace), mcp_servers=[])
        assert recorder.texts("user_message_chunk") == ["kept turn"]
