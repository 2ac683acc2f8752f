"""The session lifecycle over ACP with the official Python client, across restarts of
the real server: what a session keeps (mode, "always" answers, command turns),
session/list, session/close, session/resume and session/fork."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from tests.e2e.agent_client.acp_client import Recorder, agent, text

SLOW_ACTOR = '[defaults]\ndefault_actor = "python/tests.fakes.agents:slow_words"\n'
ORIGINAL = b"first TODO\nsecond TODO\n"
PLAN = "/plan replace pattern=TODO replacement=DONE glob=notes.txt"


def slow(workspace: Path) -> Path:
    (workspace / ".cleveragents").mkdir(exist_ok=True)
    (workspace / ".cleveragents" / "config.toml").write_text(SLOW_ACTOR)
    return workspace


def replayed(recorder: Recorder) -> list[tuple[str, str]]:
    """The replay's message chunks: (kind, text)."""
    return [(u.session_update, u.content.text) for _, u in recorder.updates
            if u.session_update in ("user_message_chunk", "agent_message_chunk")]


async def test_mode_and_always_answers_survive_a_restart(workspace):
    path = workspace / "notes.txt"
    path.write_bytes(ORIGINAL)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="manual")
        recorder.permission_answers = ["allow_always", "reject_always"]  # run: always; apply: never
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert len(recorder.permission_requests) == 2 and path.read_bytes() == ORIGINAL
    async with agent(workspace) as (conn, recorder):  # a new process, the same store
        loaded = await conn.load_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[])
        assert loaded.modes.current_mode_id == "manual"
        recorder.updates.clear()
        answer = await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert answer.stop_reason == "end_turn"
        assert recorder.permission_requests == []  # both answers were kept
        assert path.read_bytes() == ORIGINAL and "not applied" in recorder.texts()[-1]
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
    async with agent(workspace) as (conn, recorder):
        loaded = await conn.load_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[])
        assert loaded.modes.current_mode_id == "autonomous"


async def test_load_replays_command_turns_between_prompts(workspace):
    path = slow(workspace) / "notes.txt"
    path.write_bytes(ORIGINAL)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("first turn"))
        await conn.prompt(session_id=session.session_id, prompt=text("/actions"))
        recorder.permission_answers = ["allow_once"]
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        await conn.prompt(session_id=session.session_id, prompt=text("/rollback"))
        await conn.prompt(session_id=session.session_id, prompt=text("last turn"))
        live = [(kind, sid, u) for sid, u in recorder.updates
                for kind in [u.session_update] if kind in ("plan", "tool_call", "tool_call_update")]
    assert path.read_bytes() == ORIGINAL
    async with agent(workspace) as (conn, recorder):
        await conn.load_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[])
        chunks = replayed(recorder)
        users = [t for kind, t in chunks if kind == "user_message_chunk"]
        assert users == ["first turn", "/actions", PLAN, "/rollback", "last turn"]
        agents = [t for kind, t in chunks if kind == "agent_message_chunk"]
        assert agents[0] == "first turn " and agents[1].startswith("Actions for /plan")
        assert any(t.startswith("Applied the plan") for t in agents)
        assert any("restored 1 file(s): notes.txt" in t for t in agents)
        assert agents[-1] == "last turn "
        # The plan's entries and tool calls come back as they were sent, the diff included.
        again = [(u.session_update, sid, u) for sid, u in recorder.updates
                 if u.session_update in ("plan", "tool_call", "tool_call_update")]
        assert [(k, u.model_dump()) for k, _, u in again] == [(k, u.model_dump()) for k, _, u in live]
        (diff,) = [c for _, _, u in again if u.session_update == "tool_call" and u.kind == "edit"
                   for c in u.content or ()]
        assert diff.new_text == ORIGINAL.decode().replace("TODO", "DONE")


async def test_list_pages_filters_by_cwd_and_outlives_the_process(workspace):
    slow(workspace)
    sub = workspace / "sub"
    sub.mkdir()
    async with agent(workspace) as (conn, recorder):
        made = [(await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id for _ in range(55)]
        inner = (await conn.new_session(cwd=str(sub), mcp_servers=[])).session_id
        await conn.prompt(session_id=inner, prompt=text("Rename the parser\nand more"))
    async with agent(workspace) as (conn, recorder):
        first = await conn.list_sessions()
        assert first.next_cursor is not None and len(first.sessions) < 57
        seen, cursor = [], None
        while True:
            page = await conn.list_sessions(cursor=cursor)
            seen += page.sessions
            if (cursor := page.next_cursor) is None:
                break
        assert [s.session_id for s in seen] == [inner, *reversed(made)]  # newest first, each once
        (listed,) = [s for s in seen if s.session_id == inner]
        assert listed.cwd == str(sub) and listed.title == "Rename the parser" and listed.updated_at
        only_sub = await conn.list_sessions(cwd=str(sub))
        assert [s.session_id for s in only_sub.sessions] == [inner] and only_sub.next_cursor is None
        with pytest.raises(RequestError) as refused:
            await conn.list_sessions(cursor="not-a-cursor")
        assert refused.value.code == -32602 and refused.value.data["field"] == "cursor"
        with pytest.raises(RequestError) as refused:
            await conn.list_sessions(cwd="relative")
        assert refused.value.code == -32602 and refused.value.data["field"] == "cwd"


async def test_close_ends_the_turn_and_resume_opens_it_again_without_replay(workspace):
    async with agent(slow(workspace)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("kept"))
        running = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                    prompt=text(" ".join(f"w{n}" for n in range(40)))))
        while len(recorder.texts()) < 2:
            await asyncio.sleep(0.02)
        await conn.close_session(session_id=session.session_id)
        assert (await asyncio.wait_for(running, 10)).stop_reason == "cancelled"
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=text("after close"))
        assert refused.value.code == -32602 and refused.value.data["sessionId"] == session.session_id
        with pytest.raises(RequestError) as refused:
            await conn.close_session(session_id="no-such-session")
        assert refused.value.code == -32002
        await conn.close_session(session_id=session.session_id)  # known, not open here: nothing to do
        recorder.updates.clear()
        resumed = await conn.resume_session(session_id=session.session_id, cwd=str(workspace), mcp_servers=[])
        assert resumed.modes.current_mode_id == "supervised"
        await asyncio.sleep(0.2)
        assert replayed(recorder) == []  # resume replays nothing
        assert (await conn.prompt(session_id=session.session_id, prompt=text("back"))).stop_reason == "end_turn"
        with pytest.raises(RequestError) as refused:
            await conn.resume_session(session_id="no-such-session", cwd=str(workspace), mcp_servers=[])
        assert refused.value.code == -32002


async def test_a_fork_starts_from_its_parent_and_goes_its_own_way(workspace):
    async with agent(slow(workspace)) as (conn, recorder):
        parent = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=parent.session_id, mode_id="autonomous")
        await conn.prompt(session_id=parent.session_id, prompt=text("shared turn"))
        await conn.prompt(session_id=parent.session_id, prompt=text("/actions"))
        fork = await conn.fork_session(session_id=parent.session_id, cwd=str(workspace), mcp_servers=[])
        assert fork.session_id != parent.session_id and fork.modes.current_mode_id == "autonomous"
        await conn.prompt(session_id=fork.session_id, prompt=text("fork turn"))
        await conn.prompt(session_id=parent.session_id, prompt=text("parent turn"))
        with pytest.raises(RequestError) as refused:
            await conn.fork_session(session_id="no-such-session", cwd=str(workspace), mcp_servers=[])
        assert refused.value.code == -32002
    async with agent(workspace) as (conn, recorder):
        loaded = await conn.load_session(session_id=fork.session_id, cwd=str(workspace), mcp_servers=[])
        assert loaded.modes.current_mode_id == "autonomous"
        users = [t for kind, t in replayed(recorder) if kind == "user_message_chunk"]
        assert users == ["shared turn", "/actions", "fork turn"]
        listed = {s.session_id: s for s in (await conn.list_sessions()).sessions}
        assert listed[fork.session_id].title == listed[parent.session_id].title == "shared turn"
        assert listed[parent.session_id].updated_at > listed[fork.session_id].updated_at  # its last prompt
