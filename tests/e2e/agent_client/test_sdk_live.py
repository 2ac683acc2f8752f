"""A plan's steps live over ACP with the official Python client: plan entries and tool
calls as each step starts and ends, and a command step's output in a client terminal."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.agent_client.acp_client import Recorder, agent, text

ACTION = '''description = "Say hello, then edit"
[[steps]]
id = "say"
tool = "shell.run"
rationale = "Print a greeting"
arguments = { command = "echo hello from the step" }
[[steps]]
id = "edit"
tool = "fs.replace"
arguments = { pattern = "TODO", replacement = "DONE", glob = "notes.txt" }
'''


def with_action(workspace: Path) -> Path:
    actions = workspace / ".cleveragents" / "actions"
    actions.mkdir(parents=True, exist_ok=True)
    (actions / "greet-and-edit.toml").write_text(ACTION)
    notes = workspace / "notes.txt"
    notes.write_text("a TODO here\n")
    return notes


def timeline(recorder: Recorder) -> list[tuple]:
    """The plan's updates in order: ``("plan", statuses)`` and ``(kind, id, status)``."""
    out: list[tuple] = []
    for _, update in recorder.updates:
        if update.session_update == "plan":
            out.append(("plan", tuple(entry.status for entry in update.entries)))
        elif update.session_update in ("tool_call", "tool_call_update") and update.status is not None:
            out.append((update.session_update, update.tool_call_id, update.status))
    return out


async def test_each_step_shows_as_it_starts_and_ends(workspace):
    notes = with_action(workspace)
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
        answer = await conn.prompt(session_id=session.session_id, prompt=text("/plan greet-and-edit"))
        assert answer.stop_reason == "end_turn"
        steps = [item for item in timeline(recorder) if item[0] == "plan" or not item[1].endswith("-changes")]
        say, edit = (next(i[1] for i in steps if i[0] == "tool_call" and i[1].endswith(suffix))
                     for suffix in ("-say", "-edit"))
        assert steps == [
            ("plan", ("pending", "pending")),
            ("plan", ("in_progress", "pending")), ("tool_call", say, "in_progress"),
            ("plan", ("completed", "pending")), ("tool_call_update", say, "completed"),
            ("plan", ("completed", "in_progress")), ("tool_call", edit, "in_progress"),
            ("plan", ("completed", "completed")), ("tool_call_update", edit, "completed"),
        ]
        assert notes.read_text() == "a DONE here\n"
        # Without a terminal, the command's output is the step's text content.
        outputs = [u for _, u in recorder.updates if u.session_update == "tool_call_update"
                   and u.tool_call_id == say and u.content]
        assert "hello from the step" in outputs[0].content[0].content.text
        assert recorder.terminals == {}


async def test_a_failed_step_is_marked_and_the_rest_stay_pending(workspace):
    with_action(workspace)
    (workspace / ".cleveragents" / "actions" / "greet-and-edit.toml").write_text(
        ACTION.replace("echo hello from the step", "rm -rf notes.txt"))  # not on the allow-list
    async with agent(workspace) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("/plan greet-and-edit"))
        plans = [item[1] for item in timeline(recorder) if item[0] == "plan"]
        assert plans[-1] == ("completed", "pending")
        last = [u for _, u in recorder.updates if u.session_update == "plan"][-1]
        assert "failed" in last.entries[0].content
        assert ("tool_call_update", "failed") in {(i[0], i[2]) for i in timeline(recorder) if i[0] != "plan"}


async def test_a_command_steps_output_is_shown_in_a_client_terminal(workspace):
    from acp import schema

    with_action(workspace)
    async with agent(workspace, capabilities=schema.ClientCapabilities(terminal=True)) as (conn, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="autonomous")
        await conn.prompt(session_id=session.session_id, prompt=text("/plan greet-and-edit"))
        ((terminal_id, terminal),) = recorder.terminals.items()
        assert terminal["output"] == "hello from the step\n"  # shown by the client, run by the agent
        assert terminal["cwd"] == str(workspace)
        assert recorder.released == [terminal_id]
        shown = [u for _, u in recorder.updates if u.session_update == "tool_call_update" and u.content]
        (content,) = [c for u in shown for c in u.content if c.type == "terminal"]
        assert content.terminal_id == terminal_id
        assert shown[0].tool_call_id.endswith("-say")
