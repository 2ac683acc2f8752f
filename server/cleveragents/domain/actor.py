"""The actor interface: what does the thinking behind a task, an agent or a plan step.

An actor takes one turn and yields a stream of events; the task service (or the
``actor.edit`` tool) turns them into task updates (or plan edits). A turn carries
the conversation (the new message and the history before it), the context tiers
(``context``: pinned items, the session's history, a plan's guidance and files) and
the tools the actor may call, with ``invoke`` to run them.

Cancelling the consuming task cancels the actor: implementations let
``asyncio.CancelledError`` through and close what they opened (HTTP streams) on the
way out, so closing the event iterator early is always safe.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.errors import BusinessRuleViolation
from cleveragents.domain.records import record
from cleveragents.domain.task import Artifact, Message, Part, Role


@record
class TextChunk:
    """Part of the reply; the chunks of a turn together make the agent's message."""

    text: str


@record
class ArtifactChunk:
    artifact: Artifact
    append: bool = False
    last_chunk: bool = True


@record
class InputRequired:
    """The actor needs the user (an approval, a missing detail) before it goes on.
    The task waits in input-required (auth-required when ``auth``); the next message
    on the task resumes it."""

    prompt: str
    auth: bool = False


@record
class DirectReply:
    """The actor answers with a message and starts no task. Only an actor whose
    ``replies_directly`` is true may give it, and only as its first event for a message
    that starts a new task; the message is then the whole answer. Given later, or by
    another actor, its text is part of the task's reply."""

    message: Message


@dataclass(frozen=True, slots=True)
class ReplyMessage:
    """What a handler returns to answer with a message instead of a task (published as
    ``cleveragents.Message``): text, data, or both, and metadata."""

    text: str = ""
    data: Any = None
    metadata: dict[str, Any] | None = None

    def to_message(self) -> Message:
        parts = ((Part.of_text(self.text),) if self.text or self.data is None else ()) + (
            (Part.of_data(self.data),) if self.data is not None else ())
        return Message("", Role.AGENT, parts, metadata=self.metadata)  # its id is given as it is sent


@record
class ToolCall:
    """A tool the actor called, after it ran: ``result`` is what the tool gave back (or
    ``{"error": ...}``); ``rationale`` is what the actor said about why."""

    name: str
    arguments: Mapping[str, Any]
    result: Any = None
    rationale: str = ""
    failed: bool = False

    def shown(self, call_id: str) -> dict[str, Any]:
        """The call as a task's stream shows it (status-update metadata under
        ``TOOL_CALL_KEY``): arguments and result (or error) cut to a bounded size."""
        result = self.result.get("error", self.result) if self.failed and isinstance(self.result, Mapping) \
            else self.result
        return {"call_id": call_id, "name": self.name, "arguments": _cut(dict(self.arguments)), "result": _cut(result),
                "rationale": self.rationale[:MAX_SHOWN_CHARS], "failed": self.failed}


def _cut(value: Any) -> Any:
    """``value``, or a preview of its JSON when that is over ``MAX_SHOWN_CHARS``."""
    import json

    text = json.dumps(value, default=str)
    return value if len(text) <= MAX_SHOWN_CHARS else {"truncated": True, "size": len(text),
                                                       "preview": text[:MAX_SHOWN_CHARS]}


@record
class Usage:
    """What one model call cost, as the provider reported it. Consumers add them up."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cost + other.cost)

    def to_dict(self) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "cost": self.cost}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        data = data or {}
        return cls(int(data.get("input_tokens", 0)), int(data.get("output_tokens", 0)), float(data.get("cost", 0.0)))


ActorEvent = TextChunk | ArtifactChunk | InputRequired | ToolCall | Usage | DirectReply

# Message metadata a client sets to say what it is, so an actor's hints can name the
# client's own commands: ``{CLIENT_KEY: CLI_CLIENT}`` from the `agents` command line.
CLIENT_KEY = "cleveragents.client"
CLI_CLIENT = "cli"
# Status-update metadata that says the actor called a tool (``ToolCall.shown``): a
# client can show the call (ACP's tool_call) while the task works.
TOOL_CALL_KEY = "cleveragents.tool_call"
MAX_SHOWN_CHARS = 8_000


@record
class ToolInfo:
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)


# Runs a tool the actor chose: its JSON output, or a ``StructuredError`` (a refusal
# the actor is told about and may work around).
ToolInvoker = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]


@record
class Turn:
    task_id: str
    context_id: str
    message: Message
    history: Sequence[Message] = ()
    tools: Sequence[ToolInfo] = ()
    # Context tiers and instructions: "instructions" (str), "tiers" (the context
    # service's tiers), "guidance" (list of str), "files" ({path: text}), "agent".
    context: Mapping[str, Any] = field(default_factory=dict)
    invoke: ToolInvoker | None = None
    # Who sent the message, when the transport authenticated the call (HTTP with
    # credentials); None otherwise.
    caller: CallerIdentity | None = None


class Actor(Protocol):
    name: str

    def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]: ...


@record
class Budget:
    """Limits on what a session or a plan may spend; ``None`` is no limit."""

    max_tokens: int | None = None
    max_cost: float | None = None

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    def exceeded_by(self, used: Usage) -> str | None:
        """The limit ``used`` passed ("max_tokens" or "max_cost"), or ``None``."""
        if self.max_tokens is not None and used.tokens > self.max_tokens:
            return "max_tokens"
        if self.max_cost is not None and used.cost > self.max_cost:
            return "max_cost"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "max_cost": self.max_cost}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Budget:
        data = data or {}
        tokens, cost = data.get("max_tokens"), data.get("max_cost")
        return cls(None if tokens is None else int(tokens), None if cost is None else float(cost))

    def tighter(self, other: Budget) -> Budget:
        """Each limit from whichever of the two sets the lower one."""
        def low(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else min(a, b)

        return Budget(low(self.max_tokens, other.max_tokens), low(self.max_cost, other.max_cost))


class ActorError(BusinessRuleViolation):
    """The actor could not answer: its provider refused, failed or sent nonsense.
    ``data`` names the actor and what went wrong (status, provider message)."""

    default_message = "The actor failed"
