"""The local actor reads a message that names a tool as that tool's call."""

from __future__ import annotations

from cleveragents.infra.actors.local import MAX_CALL_CHARS, tool_call_from_text
from cleveragents.infra.tools.builtin import builtin_tools

TOOLS = {tool.name: tool for tool in builtin_tools()}


def test_a_call_is_its_tool_and_arguments():
    tool, arguments = tool_call_from_text(TOOLS, "fs.read path=README.md")  # type: ignore[misc]
    assert (tool.name, arguments["path"]) == ("fs.read", "README.md")


def test_a_call_longer_than_any_tools_arguments_is_refused_unread():
    """Reading arguments (shlex) costs time in their length, in a thread the server's
    other work shares: a message of megabytes that starts with a tool's name held one
    for seconds. Arguments are a path, a pattern: such a call is refused, not read."""
    reply = tool_call_from_text(TOOLS, "fs.read " + "a " * (4 * 1024 * 1024))
    assert reply == f"fs.read refused: the call is {8 * 1024 * 1024 + 7} characters; at most {MAX_CALL_CHARS} are read"
    assert isinstance(tool_call_from_text(TOOLS, "fs.search " + "x" * (MAX_CALL_CHARS - 11)), tuple)
