"""Files read through the ACP client (``fs/read_text_file``) with the official Python
client: a plan works on the editor's unsaved buffer, its diff is against it, and its
apply checks against what it read."""

from __future__ import annotations

from pathlib import Path

from acp import schema

from tests.e2e.agent_client.acp_client import Recorder, agent, text

DISK = "first TODO\n"
BUFFER = "first TODO\nan unsaved TODO\n"
PLAN = "/plan replace pattern=TODO replacement=DONE glob=notes.txt"


def capabilities(write: bool) -> schema.ClientCapabilities:
    return schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=write))


def the_diff(recorder: Recorder):
    (changes,) = [u for _, u in recorder.updates if u.session_update == "tool_call" and u.kind == "edit" and u.content]
    (diff,) = changes.content
    return diff


async def plan_in_autonomous_mode(conn, recorder: Recorder) -> str:
    session = await conn.new_session(cwd=str(recorder_workspace(recorder)), mcp_servers=[])
    await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
    await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
    return session.session_id


def recorder_workspace(recorder: Recorder) -> Path:
    return recorder.workspace  # type: ignore[attr-defined, no-any-return]


async def test_a_plan_works_on_the_unsaved_buffer_and_the_editor_writes_it(workspace):
    notes = workspace / "notes.txt"
    notes.write_text(DISK)
    async with agent(workspace, capabilities=capabilities(write=True)) as (conn, recorder):
        recorder.workspace = workspace
        recorder.buffers[str(notes)] = BUFFER
        session_id = await plan_in_autonomous_mode(conn, recorder)
        assert str(notes) in recorder.reads
        diff = the_diff(recorder)
        assert (diff.old_text, diff.new_text) == (BUFFER, BUFFER.replace("TODO", "DONE"))
        assert recorder.writes == [(str(notes), BUFFER.replace("TODO", "DONE"))]
        await conn.prompt(session_id=session_id, prompt=text("/rollback"))
        assert recorder.writes[-1] == (str(notes), BUFFER)  # back to the buffer the plan read


async def test_without_client_writes_the_server_applies_the_buffers_change(workspace):
    notes = workspace / "notes.txt"
    notes.write_text(DISK)
    async with agent(workspace, capabilities=capabilities(write=False)) as (conn, recorder):
        recorder.workspace = workspace
        recorder.buffers[str(notes)] = BUFFER
        await plan_in_autonomous_mode(conn, recorder)
        assert the_diff(recorder).old_text == BUFFER
        assert notes.read_text() == BUFFER.replace("TODO", "DONE")
        assert recorder.writes == []


async def test_a_buffer_changed_after_the_plan_read_it_refuses_the_apply(workspace):
    notes = workspace / "notes.txt"
    notes.write_text(DISK)
    async with agent(workspace, capabilities=capabilities(write=True)) as (conn, recorder):
        recorder.buffers[str(notes)] = BUFFER
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        recorder.permission_answers = ["allow_once"]
        recorder.before_permission = lambda: recorder.buffers.update({str(notes): BUFFER + "typed meanwhile\n"})
        await conn.prompt(session_id=session.session_id, prompt=text(PLAN))
        assert recorder.permission_requests  # asked before the apply, and the buffer changed then
        assert recorder.writes == [] and notes.read_text() == DISK
        reply = recorder.texts()[-1]
        assert "changed" in reply and "notes.txt" in reply


async def test_a_buffer_that_differs_only_in_line_endings_keeps_the_files(workspace):
    notes = workspace / "notes.txt"
    notes.write_bytes(b"one TODO\r\ntwo\r\n")
    async with agent(workspace, capabilities=capabilities(write=False)) as (conn, recorder):
        recorder.workspace = workspace
        recorder.buffers[str(notes)] = "one TODO\ntwo\n"  # editors hand out \n
        await plan_in_autonomous_mode(conn, recorder)
        assert the_diff(recorder).old_text == "one TODO\r\ntwo\r\n"
        assert notes.read_bytes() == b"one DONE\r\ntwo\r\n"


async def test_a_prompts_tools_read_the_unsaved_buffer(workspace):
    notes = workspace / "notes.txt"
    notes.write_text(DISK)
    async with agent(workspace, capabilities=capabilities(write=False)) as (conn, recorder):
        recorder.buffers[str(notes)] = BUFFER
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("fs.read path=notes.txt"))
        assert recorder.reads == [str(notes)]
        assert "an unsaved TODO" in "".join(recorder.texts())
