"""Plans over ACP with the official Python client: slash commands, plan entries, tool
calls with diffs, permission requests at the mode's gates, and /rollback."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.agent_client.acp_client import Recorder, agent, text

ORIGINAL = b"first TODO\r\nsecond line, no newline at the end: TODO"
PLAN = "/plan replace pattern=TODO replacement=DONE glob=notes.txt"


def updates_of(recorder: Recorder, kind: str) -> list:
    return [u for _, u in recorder.updates if u.session_update == kind]


def notes(workspace: Path) -> Path:
    path = workspace / "notes.txt"
    if not path.exists():
        path.write_bytes(ORIGINAL)
    return path


async def test_commands_are_offered_with_rollback(workspace):
    async with agent(workspace) as (conn, recorder):
        await conn.new_session(cwd=str(workspace), mcp_servers=[])
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("/actions"))
        (offered, _) = updates_of(recorder, "available_commands_update")
        assert {c.name for c in offered.available_commands} == {"plan", "rollback", "actions"}
        assert "replace" in "".join(recorder.texts())


async def test_a_supervised_plan_shows_its_diff_asks_before_applying_and_rolls_back(workspace):
    path = notes(workspace)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        recorder.permission_answers = ["allow_once"]
        answer = await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert answer.stop_reason == "end_turn"
        plans = updates_of(recorder, "plan")
        assert [e.status for e in plans[-1].entries] == ["completed"]
        calls = updates_of(recorder, "tool_call")
        (changes,) = [c for c in calls if c.kind == "edit" and c.content]
        (diff,) = changes.content
        assert diff.type == "diff" and diff.path == str(workspace / "notes.txt")
        assert diff.old_text == ORIGINAL.decode() and diff.new_text == ORIGINAL.decode().replace("TODO", "DONE")
        (asked,) = recorder.permission_requests
        assert asked.tool_call.tool_call_id == changes.tool_call_id
        assert {o.kind for o in asked.options} == {"allow_once", "allow_always", "reject_once", "reject_always"}
        assert path.read_bytes() == ORIGINAL.replace(b"TODO", b"DONE")
        assert "/rollback" in recorder.texts()[-1]

        answer = await conn.prompt(session_id=session.session_id, prompt=text("/rollback"))
        assert answer.stop_reason == "end_turn"
        assert path.read_bytes() == ORIGINAL  # byte for byte, CRLF and missing newline included
        assert "restored 1 file(s): notes.txt" in recorder.texts()[-1]


async def test_a_refused_apply_leaves_the_workspace_alone(workspace):
    path = notes(workspace)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        recorder.permission_answers = ["reject_once"]
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert path.read_bytes() == ORIGINAL
        assert "not applied" in recorder.texts()[-1]
        await conn.prompt(session_id=session.session_id, prompt=text("/rollback"))
        assert "No applied plan" in recorder.texts()[-1]


async def test_always_is_remembered_per_session_and_gate(workspace):
    path = notes(workspace)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="manual")
        recorder.permission_answers = ["allow_always", "reject_always"]  # execute: always; apply: never
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert len(recorder.permission_requests) == 2 and path.read_bytes() == ORIGINAL
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert len(recorder.permission_requests) == 2  # both gates answered from memory
        assert path.read_bytes() == ORIGINAL
        other = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=other.session_id, mode_id="manual")
        recorder.permission_answers = ["allow_once", "allow_once"]
        await conn.prompt(session_id=other.session_id, prompt=text(PLAN))
        assert len(recorder.permission_requests) == 4  # another session asks again
        assert path.read_bytes() == ORIGINAL.replace(b"TODO", b"DONE")


async def test_an_autonomous_session_applies_without_asking(workspace):
    path = notes(workspace)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert recorder.permission_requests == []
        assert path.read_bytes() == ORIGINAL.replace(b"TODO", b"DONE")


async def test_a_bad_command_says_what_is_wrong(workspace):
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=text("/plan no-such-action"))
        assert answer.stop_reason == "end_turn"
        assert "/plan failed: no action named no-such-action" in recorder.texts()[-1]


async def test_a_client_that_writes_files_gets_the_apply_and_the_rollback(workspace):
    from acp import schema

    path = notes(workspace)
    writing = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=False, write_text_file=True))
    async with agent(workspace, capabilities=writing) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        changed = ORIGINAL.decode().replace("TODO", "DONE")
        assert recorder.writes == [(str(workspace / "notes.txt"), changed)]
        assert path.read_bytes() == changed.encode()
        await conn.prompt(session_id=session.session_id, prompt=text("/rollback"))
        assert recorder.writes[1:] == [(str(workspace / "notes.txt"), ORIGINAL.decode())]
        assert path.read_bytes() == ORIGINAL


async def test_a_write_the_client_refuses_fails_the_apply_and_says_why(workspace):
    from acp import schema

    path = notes(workspace)
    writing = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(write_text_file=True))
    async with agent(workspace, capabilities=writing) as (conn, recorder):
        recorder.refuse_writes = True
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
        answer = await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert answer.stop_reason == "end_turn"
        assert "the buffer is read-only" in recorder.texts()[-1]
        assert path.read_bytes() == ORIGINAL
