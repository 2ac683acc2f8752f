"""The tools an actor calls during a plain prompt, as ACP tool calls, with the official
Python client: a model's (the chat-completions actor, on a fake model server) and the
local actor's."""

from __future__ import annotations

import pytest

from tests.e2e.agent_client.acp_client import Recorder, agent, text
from tests.fakes.openai_server import FakeOpenAI, Reply


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    with FakeOpenAI() as server:
        monkeypatch.setenv("CLEVERAGENTS_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-e2e")
        yield server


def tool_updates(recorder: Recorder) -> list:
    return [u for _, u in recorder.updates if u.session_update in ("tool_call", "tool_call_update")]


async def test_a_models_tool_calls_are_shown_as_they_happen(workspace, fake):
    (workspace / "notes.txt").write_text("remember the milk\n")
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text('[defaults]\ndefault_actor = "openai/gpt-4o"\n')
    fake.reply(Reply(text="Reading the notes.", tool_calls=[{"name": "fs__read", "arguments": {"path": "notes.txt"}}]),
               Reply(text="They say: remember the milk."),)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=text("What do my notes say?"))
        assert answer.stop_reason == "end_turn"
        started, ended = tool_updates(recorder)
        assert (started.session_update, started.status, started.kind) == ("tool_call", "in_progress", "read")
        assert started.title == "fs.read path=notes.txt" and started.raw_input == {"path": "notes.txt"}
        assert (ended.session_update, ended.tool_call_id, ended.status) == (
            "tool_call_update", started.tool_call_id, "completed")
        assert "remember the milk" in str(ended.raw_output)
        assert "remember the milk." in "".join(recorder.texts())
        # The model got the tool's result back: the call really ran.
        assert any(m.get("role") == "tool" for m in fake.requests[1]["messages"])


async def test_a_failed_tool_call_is_shown_failed(workspace, fake):
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text('[defaults]\ndefault_actor = "openai/gpt-4o"\n')
    fake.reply(Reply(tool_calls=[{"name": "fs__read", "arguments": {"path": "missing.txt"}}]),
               Reply(text="There is no such file."))
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("Read missing.txt"))
        started, ended = tool_updates(recorder)
        assert ended.status == "failed" and "missing.txt" in str(ended.raw_output)


async def test_the_local_actors_tool_is_a_tool_call(workspace):
    (workspace / "notes.txt").write_text("a TODO here\n")
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("fs.search TODO"))
        started, ended = tool_updates(recorder)
        assert started.title.startswith("fs.search pattern=TODO glob=**/*")
        assert (started.kind, ended.status) == ("search", "completed")
        assert "notes.txt" in str(ended.raw_output)


async def test_a_models_tool_reads_the_clients_buffer(workspace, fake):
    from acp import schema

    notes = workspace / "notes.txt"
    notes.write_text("on disk\n")
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text('[defaults]\ndefault_actor = "openai/gpt-4o"\n')
    fake.reply(Reply(tool_calls=[{"name": "fs__read", "arguments": {"path": "notes.txt"}}]), Reply(text="Done."))
    reads = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True))
    async with agent(workspace, capabilities=reads) as (conn, recorder):
        recorder.buffers[str(notes)] = "in the unsaved buffer\n"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("Read my notes"))
        _, ended = tool_updates(recorder)
        assert "in the unsaved buffer" in str(ended.raw_output) and "on disk" not in str(ended.raw_output)
        assert "in the unsaved buffer" in str(fake.requests[1]["messages"])  # what the model was given
