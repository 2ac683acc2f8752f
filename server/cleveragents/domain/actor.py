"""The actor interface: what does the thinking behind a task, an agent or a plan step.

An actor takes one turn (the new message, the history, the context and the tools it
may use) and yields a stream of events. The task service turns them into task
updates. Cancelling the consuming task cancels the actor: implementations must let
``asyncio.CancelledError`` through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cleveragents.domain.task import Artifact, Message


@dataclass(frozen=True, slots=True)
class TextChunk:
    """Part of the reply; the chunks of a turn together make the agent's message."""

    text: str


@dataclass(frozen=True, slots=True)
class ArtifactChunk:
    artifact: Artifact
    append: bool = False
    last_chunk: bool = True


@dataclass(frozen=True, slots=True)
class InputRequired:
    """The actor needs the user (an approval, a missing detail) before it goes on.
    The task waits in input-required (auth-required when ``auth``); the next message
    on the task resumes it."""

    prompt: str
    auth: bool = False


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]
    result: Any = None
    rationale: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


ActorEvent = TextChunk | ArtifactChunk | InputRequired | ToolCall | Usage


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Turn:
    task_id: str
    context_id: str
    message: Message
    history: Sequence[Message] = ()
    tools: Sequence[ToolInfo] = ()
    context: Mapping[str, Any] = field(default_factory=dict)


class Actor(Protocol):
    name: str

    def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]: ...
