"""A turn as chat-completions messages and function definitions.

Shared by the chat actors: the system message says who the actor is and what it
knows (the turn's context tiers), the history becomes user/assistant messages, and
our tools become function definitions. Function names may only hold letters,
digits, ``_`` and ``-``, so ``fs.read`` travels as ``fs__read`` and is mapped back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from cleveragents.domain.actor import ToolInfo, Turn
from cleveragents.domain.task import Message, Role

MAX_CONTEXT_CHARS = 200_000  # what the system message may carry of the context tiers
MAX_TOOL_RESULT_CHARS = 32_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

BASE_INSTRUCTIONS = (
    "You are an agent working in a software workspace. Answer the user's message. "
    "Before each tool call, say in one sentence why you make it."
)


def function_name(tool: str) -> str:
    return _UNSAFE.sub("_", tool.replace(".", "__"))[:64]


def function_definitions(tools: list[ToolInfo] | tuple[ToolInfo, ...]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The ``tools`` request field, and the map from function name back to tool name."""
    definitions, names = [], {}
    for tool in tools:
        name = function_name(tool.name)
        names[name] = tool.name
        schema = dict(tool.input_schema) or {"type": "object", "properties": {}}
        definitions.append({"type": "function", "function": {
            "name": name, "description": tool.description[:1024], "parameters": schema}})
    return definitions, names


def system_message(turn: Turn) -> dict[str, Any]:
    context = turn.context
    parts = [str(context.get("instructions") or BASE_INSTRUCTIONS)]
    if agent := context.get("agent"):
        persona = ", ".join(f"{k}: {v}" for k, v in dict(agent).items() if v)
        parts.append(f"You act as this agent: {persona}.")
    if guidance := context.get("guidance"):
        parts.append("Guidance from the user, to follow:\n" + "\n".join(f"- {g}" for g in guidance))
    if files := context.get("files"):
        parts.append("Files (path, then content):\n" + "\n\n".join(
            f"--- {path}\n{text}" for path, text in dict(files).items()))
    for tier in context.get("tiers") or ():
        if tier.get("name") == "history":
            continue  # it is the conversation itself
        items = [item for item in tier.get("items", []) if item.get("content") not in (None, "")]
        if items:
            parts.append(f"Context ({tier.get('name')}):\n" + "\n".join(
                f"- {item.get('key')}: {_as_text(item.get('content'))}" for item in items))
    text = "\n\n".join(parts)
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + "\n... (context truncated)"
    return {"role": "system", "content": text}


def conversation(turn: Turn) -> list[dict[str, Any]]:
    """System message, history, then the new message. A session's history tier (every
    task of the session, this one included) is the history when the turn has one."""
    messages = [system_message(turn)]
    tier = _history_tier(turn)
    if tier is None:
        messages += [_chat_message(m) for m in turn.history if m.text()]
    else:
        messages += [{"role": "assistant" if item.get("role") == "agent" else "user",
                      "content": _as_text(item["content"])}
                     for item in tier.get("items", [])
                     if item.get("content") and item.get("key") != turn.message.message_id]
    messages.append(_chat_message(turn.message))
    return messages


def _history_tier(turn: Turn) -> Mapping[str, Any] | None:
    return next((t for t in turn.context.get("tiers") or () if t.get("name") == "history"), None)


def tool_result_message(call_id: str, result: Mapping[str, Any]) -> dict[str, Any]:
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + " ... (truncated)"
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _chat_message(message: Message) -> dict[str, Any]:
    return {"role": "assistant" if message.role is Role.AGENT else "user", "content": message.text()}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
