"""What goes between ACP's shapes and the A2A ones the services speak: a prompt's
content blocks as message parts, and a task's stream and history as ACP
``session/update`` notifications."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cleveragents.transports.agent_client.wire import INVALID_PARAMS, AgentClientError

# The prompt content ACP lets an agent refuse; text and resource links are always taken.
PROMPT_CAPABILITIES = {"image": False, "audio": False, "embeddedContext": True}
_STOP_REASONS = {
    "TASK_STATE_COMPLETED": "end_turn",
    "TASK_STATE_INPUT_REQUIRED": "end_turn",  # the question is in the reply; the next prompt answers it
    "TASK_STATE_AUTH_REQUIRED": "end_turn",
    "TASK_STATE_CANCELED": "cancelled",
    "TASK_STATE_REJECTED": "refusal",
}
FAILED = "TASK_STATE_FAILED"


def prompt_text(blocks: Any) -> str:
    """A prompt's content blocks as one text: text as it is, a resource link as its
    URI, an embedded text resource fenced under its URI. Anything the agent did not
    declare (images, audio, binary resources) is -32602."""
    if not isinstance(blocks, list) or not blocks:
        raise AgentClientError(INVALID_PARAMS, "Invalid params: prompt must be a non-empty list of content blocks",
                               {"field": "prompt"})
    texts: list[str] = []
    for index, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            texts.append(f"<{block['uri']}>")
        elif kind == "resource" and isinstance(resource := block.get("resource"), dict) \
                and isinstance(resource.get("text"), str):
            texts.append(f"{resource.get('uri', '')}\n```\n{resource['text']}\n```")
        else:
            raise AgentClientError(INVALID_PARAMS, f"Invalid params: prompt[{index}] is a content block this agent "
                                   "does not take", {"field": f"prompt[{index}]", "type": kind,
                                                     "accepted": ["text", "resource_link", "resource (text)"]})
    return "\n\n".join(texts)


def text_update(session_id: str, kind: str, text: str) -> dict[str, Any]:
    """A ``session/update`` carrying a chunk of a message (``agent_message_chunk``,
    ``user_message_chunk``)."""
    return {"sessionId": session_id, "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}


def _texts(parts: Any) -> str:
    return "".join(part["text"] for part in parts or () if isinstance(part, dict) and isinstance(part.get("text"), str))


class TurnStream:
    """Follows one prompt's A2A stream (1.0 shapes): the chunks to send, the task's id
    and its last state."""

    def __init__(self, session_id: str):
        self.session_id = session_id
        self.task_id: str | None = None
        self.state: str | None = None
        self.reason = ""  # a failed task's status message

    def updates(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if (task := payload.get("task")) is not None:
            self.task_id = task.get("id")
            self._status(task.get("status") or {})
        elif (status := payload.get("statusUpdate")) is not None:
            self.task_id = status.get("taskId", self.task_id)
            if text := self._status(status.get("status") or {}):
                yield text_update(self.session_id, "agent_message_chunk", text)
            from cleveragents.a2a.codecs import TOOL_CALL_KEY  # loaded by the facade already

            if isinstance(call := (status.get("metadata") or {}).get(TOOL_CALL_KEY), dict):
                yield from self._tool_call(call)
        elif (artifact := payload.get("artifactUpdate")) is not None:
            if text := _texts((artifact.get("artifact") or {}).get("parts")):
                yield text_update(self.session_id, "agent_message_chunk", text)
        elif (message := payload.get("message")) is not None:  # a direct reply, without a task
            self.state = "TASK_STATE_COMPLETED"
            if text := _texts(message.get("parts")):
                yield text_update(self.session_id, "agent_message_chunk", text)

    def _status(self, status: dict[str, Any]) -> str:
        """Takes the state; the status message's text, which the user should read (a
        question, a failure's reason), when it has one."""
        self.state = status.get("state", self.state)
        text = _texts((status.get("message") or {}).get("parts"))
        if self.state == FAILED:
            self.reason = text
            return ""  # the prompt's error says it
        return text if self.state in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED") else ""

    def _tool_call(self, call: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A tool the actor called (it has run already): a ``tool_call`` in progress with
        its input, then its end with its output."""
        from cleveragents.transports.agent_client.plan_steps import tool_kind

        name = str(call.get("name", "tool"))
        call_id = f"{self.task_id or 'turn'}-{call.get('call_id', '')}"
        given = call.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        said = " ".join(f"{key}={value}" for key, value in arguments.items() if isinstance(value, (str, int, float)))
        title = f"{name} {said}" if said else name
        yield {"sessionId": self.session_id, "update": {
            "sessionUpdate": "tool_call", "toolCallId": call_id, "title": title[:200], "kind": tool_kind(name),
            "status": "in_progress", "rawInput": arguments}}
        ended: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                                 "status": "failed" if call.get("failed") else "completed"}
        if call.get("result") is not None:
            ended["rawOutput"] = call["result"] if isinstance(call["result"], dict) else {"result": call["result"]}
        yield {"sessionId": self.session_id, "update": ended}

    def stop_reason(self) -> str | None:
        """ACP's stopReason for the last state; ``None`` when the turn failed."""
        return _STOP_REASONS.get(self.state or "", None if self.state == FAILED else "end_turn")


def history_updates(session_id: str, tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A session's turns (its tasks, oldest first) as the updates that replay them."""
    for task in tasks:
        for message in task.get("history") or ():
            if text := _texts(message.get("parts")):
                kind = "user_message_chunk" if message.get("role") == "ROLE_USER" else "agent_message_chunk"
                yield text_update(session_id, kind, text)
