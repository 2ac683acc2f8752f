"""The default actor: deterministic, local, with no language model.

It lets the product work out of the box. A message that names a tool with its
arguments (``fs.search TODO``, ``fs.read path=README.md``) runs that tool read-only
and answers with the result; anything else gets a plain description of what it can
do. Tools that change files are refused here: changes go through a plan, where they
can be reviewed.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from cleveragents.domain.actor import CLI_CLIENT, CLIENT_KEY, ActorEvent, TextChunk, ToolCall, Turn
from cleveragents.domain.errors import StructuredError
from cleveragents.domain.tools import Tool, ToolContext, WorkspaceView
from cleveragents.infra.actors.toolbox import bounded
from cleveragents.infra.tools.runner import ToolRunner

NAME = "local/default"
READ_ONLY_TOOLS = frozenset({"fs.read", "fs.glob", "fs.search"})
MAX_REPLY_CHARS = 20_000
MAX_CALL_CHARS = 16 * 1024  # a tool's name and arguments (a path, a pattern); longer is refused unread
_FIRST_WORD = re.compile(r"\s*(\S+)")
ToolT = TypeVar("ToolT", bound=Tool)


class LocalActor:
    def __init__(self, tools: Callable[[], Sequence[Tool]], view: Callable[[], WorkspaceView],
                 workspace: str, name: str = NAME, runner: ToolRunner | None = None):
        self.name = name
        self._tools = tools
        self._view = view
        self._workspace = workspace
        self._runner = runner or ToolRunner()

    async def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        tools = {tool.name: tool for tool in self._tools()}
        text = turn.message.text()
        if _first_word(text) not in tools:  # no tool named: nothing to read, whatever the size
            yield TextChunk(self._introduction(tools))
            return
        # Reading the arguments (shlex) and checking them cost time in their size: off the loop.
        from_cli = (turn.message.metadata or {}).get(CLIENT_KEY) == CLI_CLIENT
        call = await asyncio.to_thread(tool_call_from_text, tools, text, refuse=lambda tool: _needs_plan(tool, from_cli))
        if call is None:
            yield TextChunk(self._introduction(tools))
            return
        if isinstance(call, str):
            yield TextChunk(call)
            return
        tool, arguments = call
        try:
            context = ToolContext(view=self._view(), workspace=self._workspace)
            result = await self._runner.call(tool, arguments, context)
        except StructuredError as exc:
            yield TextChunk(_refused(tool.name, exc))
            return
        yield ToolCall(tool.name, arguments, result.output)
        yield TextChunk(await asyncio.to_thread(_render, tool.name, result.summary, result.output))

    def _introduction(self, tools: dict[str, Tool]) -> str:
        lines = [
            ("No language model is configured, so this is the local actor: it runs a tool "
             "when your message starts with the tool's name and its arguments, for example "
             "`fs.search TODO` or `fs.read path=README.md`."),
            "Read-only tools it runs here:",
        ]
        lines += [f"- {name}: {tools[name].description}" for name in sorted(tools) if name in READ_ONLY_TOOLS]
        others = sorted(set(tools) - READ_ONLY_TOOLS)
        if others:
            lines.append("Tools that change files run in plans: " + ", ".join(others) + ".")
        lines.append("Configure a model actor (for example `openai/gpt-4o`) for open-ended requests.")
        return "\n".join(lines)


def tool_call_from_text(
    tools: Mapping[str, ToolT], text: str, *, refuse: Callable[[ToolT], str | None] | None = None
) -> tuple[ToolT, dict[str, Any]] | str | None:
    """The tool named by the first word of ``text`` and its validated arguments (the
    rest, read by ``parse_arguments``). ``None`` when the first word names no tool;
    the reply text when the call is refused: by ``refuse`` (asked before the
    arguments are read), past ``MAX_CALL_CHARS``, or because they do not parse or
    validate."""
    first = _first_word(text)
    if first not in tools:
        return None
    words = text.strip()
    tool = tools[first]
    if refuse is not None and (reason := refuse(tool)) is not None:
        return reason
    if len(words) > MAX_CALL_CHARS:
        return f"{tool.name} refused: the call is {len(words)} characters; at most {MAX_CALL_CHARS} are read"
    try:
        return tool, tool.validate(parse_arguments(tool, words[len(first):]))
    except ValueError as exc:  # shlex: an unclosed quote
        return f"{tool.name} refused: {exc}"
    except StructuredError as exc:
        return _refused(tool.name, exc)


def _first_word(text: str) -> str:
    """The message's first word, read without copying the rest of it."""
    match = _FIRST_WORD.match(text)
    return match.group(1) if match else ""


def parse_arguments(tool: Tool, text: str) -> dict[str, Any]:
    """``key=value`` pairs; bare words fill the schema's required fields in order."""
    schema = tool.input_schema()
    required = [name for name in schema.get("required", []) if name in schema.get("properties", {})]
    arguments: dict[str, Any] = {}
    positional: list[str] = []
    for word in shlex.split(text):
        key, sep, value = word.partition("=")
        if sep and key in schema.get("properties", {}):
            arguments[key] = _scalar(value)
        else:
            positional.append(word)
    missing = [name for name in required if name not in arguments]
    for name, value in zip(missing, positional, strict=False):
        arguments[name] = value
    if len(positional) > len(missing) and missing:
        arguments[missing[-1]] = " ".join(positional[len(missing) - 1:])
    return arguments


def _needs_plan(tool: Tool, from_cli: bool = False) -> str | None:
    if tool.name in READ_ONLY_TOOLS:
        return None
    if from_cli:  # the user has the command line, not the protocol
        how = "run `agents plan use ACTION --arg KEY=VALUE ...` (`agents action list` lists the actions)."
    else:
        how = "call `_cleveragents/plan/use` with an action (see `_cleveragents/registry/action/list`)."
    return f"{tool.name} changes files, so it runs in a plan you can review: {how}"


def _refused(name: str, exc: StructuredError) -> str:
    return f"{name} refused: {exc.message} {json.dumps(exc.data, default=str)}"


def _scalar(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _render(name: str, summary: str, output: dict[str, Any]) -> str:
    # Cut to the cap first, then encoded piece by piece: a result of 10,000 matches, or a
    # file of 32 MiB, costs no more than a page.
    pieces, size = [], 0
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    for piece in encoder.iterencode(bounded(output, MAX_REPLY_CHARS)):
        pieces.append(piece)
        size += len(piece)
        if size > MAX_REPLY_CHARS:
            break
    body = "".join(pieces)
    if len(body) > MAX_REPLY_CHARS:
        body = body[:MAX_REPLY_CHARS] + "\n... (truncated)"
    return f"{name}: {summary}\n{body}" if summary else f"{name}:\n{body}"
