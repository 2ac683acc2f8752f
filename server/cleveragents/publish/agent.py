"""``Agent``: a user's own agent, published over A2A with a few lines of Python.

An agent answers a turn in one of three ways: its ``handler`` (a function the user
writes), its ``actor`` (another actor it delegates to, a model actor for example), or,
with neither, deterministically over its own tools: a message that starts with a
tool's name runs that tool, anything else gets an introduction.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import replace
from typing import Any

from cleveragents.a2a import extensions as a2a_extensions
from cleveragents.a2a.cards import SkillSpec
from cleveragents.a2a.extensions import AgentExtension
from cleveragents.domain.actor import (
    ActorEvent,
    ArtifactChunk,
    DirectReply,
    InputRequired,
    TextChunk,
    ToolCall,
    Turn,
)
from cleveragents.domain.errors import BusinessRuleViolation
from cleveragents.domain.replies import ReplyAs
from cleveragents.domain.task import Artifact, Message, Part, Role
from cleveragents.ids import new_id
from cleveragents.infra.actors.handlers import handler_events, runs_on_loop, streams, takes_turn
from cleveragents.infra.actors.local import tool_call_from_text
from cleveragents.publish.reply import AgentReply, collect_artifact
from cleveragents.publish.script_actors import resolve_for_script
from cleveragents.publish.tools import FunctionTool, as_tool, render, to_jsonable

Handler = Callable[..., Any]


class Agent:
    """An actor with a name, a role, a goal and tools. ``actor`` is an object with
    ``respond`` or a ``provider/model`` name (``actor_name``) that the composition
    root resolves by setting ``actor`` (``start`` resolves it for itself).
    ``reply_as``: a task's text reply as its ``response`` artifact (the default), as
    its final status message, or both (``ReplyAs``)."""

    def __init__(self, name: str, role: str = "", goal: str = "", instructions: str = "",
                 tools: Iterable[Any] = (), actor: Any = None, handler: Handler | None = None,
                 extensions: Iterable[AgentExtension] = (), reply_as: ReplyAs | str = ReplyAs.ARTIFACT):
        if not name:
            raise TypeError("an agent needs a name")
        if handler is not None and actor is not None:
            raise TypeError(f"agent {name!r}: give a handler or an actor, not both")
        if handler is not None and not callable(handler):
            raise TypeError(f"agent {name!r}: the handler must be callable")
        self.name = name
        self.role = role
        self.goal = goal
        self.instructions = instructions
        self.tools: tuple[FunctionTool, ...] = tuple(as_tool(t) for t in tools)
        _check_unique(name, self.tools)
        # For the card (``A2A`` adds them to its own); a uri twice, differently, is a TypeError.
        self.extensions: tuple[AgentExtension, ...] = a2a_extensions.merge(extensions)
        self.handler = handler
        # How a task's text reply reaches the client (domain/replies.py).
        self.reply_as = ReplyAs.parse(reply_as)
        self._handler_takes_turn = handler is not None and takes_turn(handler)
        self._handler_on_loop = handler is not None and runs_on_loop(handler)
        self._handler_streams = handler is not None and streams(handler)
        self.actor_name: str | None = actor if isinstance(actor, str) else None
        self.actor: Any = None if isinstance(actor, str) else actor
        self._script_actor: Any = None  # the model actor ``start`` resolved, if any
        self._script_resolved = False
        if self.actor is not None and not callable(getattr(self.actor, "respond", None)):
            raise TypeError(f"agent {name!r}: the actor must have respond(turn) or be a 'provider/model' name")

    def __repr__(self) -> str:
        return f"Agent({self.name!r})"

    @property
    def uses_default_actor(self) -> bool:
        """With no handler and no actor, the agent answers with the configured default
        actor when that is a model, and from its own tools when it is the local one."""
        return self.handler is None and self.actor is None and self.actor_name is None

    @property
    def replies_directly(self) -> bool:
        """A handler that returns its answer may return a ``Message`` instead of a task.
        One that yields (a generator) streams, so its task starts at once."""
        return self.handler is not None and not self._handler_streams

    @property
    def description(self) -> str:
        """For the agent card: "<role>. <goal>", else the instructions."""
        return ". ".join(text for text in (self.role, self.goal) if text) or self.instructions

    def skills(self) -> list[SkillSpec]:
        """One skill per tool, for the agent card."""
        return [SkillSpec(t.name, t.name, t.description or t.name, tags=("tool",)) for t in self.tools]

    def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        # The events of whichever way answers, handed on as they are (no generator of
        # our own around them).
        if self.handler is not None:
            return self._from_handler(turn)
        if self.actor is not None:
            delegated: AsyncIterator[ActorEvent] = self.actor.respond(self._delegated(turn))
            return delegated
        if self.actor_name is not None:
            raise BusinessRuleViolation(
                f"Agent {self.name!r} uses the actor {self.actor_name!r}, which no configured provider resolved",
                {"agent": self.name, "actor": self.actor_name},
            )
        return self._deterministic(turn)

    # -- one turn run locally (``agent.start``) ----------------------------------------
    def start(self, text: str) -> AgentReply:
        """Answer ``text`` and return the reply: its text (the question, if the agent
        asks one), which is an ``AgentReply`` carrying the artifacts and parts too."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.astart(text))
        raise RuntimeError("start() can't run inside an event loop: use `await agent.astart(text)`")

    async def astart(self, text: str) -> AgentReply:
        """``start`` inside an event loop. The actor named ``provider/model`` (with none,
        the configured default actor) is resolved once, from the environment and the
        configuration files, as a server would; a ``TaskRejected`` from the handler
        comes out of here."""
        context_id = new_id()
        message = Message(new_id(), Role.USER, (Part.of_text(text),), context_id)
        turn = Turn(new_id(), context_id, message)
        if self.handler is None and self.actor is None and not self._script_resolved:
            self._script_actor = await asyncio.to_thread(resolve_for_script, self.actor_name)
            self._script_resolved = True
        if self._script_actor is not None and self.actor is None:
            events = self._script_actor.respond(self._delegated(turn))
        else:
            events = self.respond(turn)
        reply: list[str] = []
        artifacts: list[Artifact] = []
        direct: Message | None = None  # the first message a handler answered with
        question: InputRequired | None = None
        try:
            async for event in events:
                if isinstance(event, TextChunk):
                    reply.append(event.text)
                elif isinstance(event, ArtifactChunk):
                    collect_artifact(artifacts, event)
                elif isinstance(event, DirectReply):  # a handler's Message: its text is the reply
                    reply.append(event.message.text())
                    direct = direct or event.message
                elif isinstance(event, InputRequired):
                    reply.append(event.prompt)
                    question = event
                    break
        finally:  # an actor left early closes what it opened (an HTTP stream)
            if (aclose := getattr(events, "aclose", None)) is not None:
                await aclose()
        return AgentReply("".join(reply), artifacts=artifacts, message=direct, input_required=question)

    # -- the three ways to answer ------------------------------------------------------
    def _from_handler(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        assert self.handler is not None
        return handler_events(self.handler, turn, self._handler_takes_turn, self._handler_on_loop)

    def _delegated(self, turn: Turn) -> Turn:
        """The turn with this agent's tools and persona, for the actor it delegates to."""
        persona = {"name": self.name, "role": self.role, "goal": self.goal, "instructions": self.instructions}
        own = {t.name: t for t in self.tools}
        outer = turn.invoke

        async def invoke(name: str, arguments: Any) -> dict[str, Any]:
            # The agent's own tools run here; the backend's (if any) where they came from.
            if name in own:
                return {"result": to_jsonable(await own[name].call(arguments))}
            if outer is None:
                raise BusinessRuleViolation(f"Agent {self.name!r} has no tool {name!r}", {"tool": name})
            return await outer(name, arguments)

        return replace(turn, tools=(*turn.tools, *(t.info() for t in self.tools)),
                       context={**turn.context, "agent": persona}, invoke=invoke if own or outer else None)

    async def _deterministic(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        # Reading the message (shlex) and checking the arguments cost time in its size: off the loop.
        call = await asyncio.to_thread(tool_call_from_text, {t.name: t for t in self.tools}, turn.message.text())
        if call is None:
            yield TextChunk(self.introduction())
            return
        if isinstance(call, str):
            yield TextChunk(call)
            return
        tool, arguments = call
        # The arguments are validated already: call the function, not `tool.call`.
        result = await tool.call_checked(arguments)
        yield ToolCall(tool.name, arguments, result)
        yield TextChunk(render(result))

    def introduction(self) -> str:
        lines = [f"I am {self.name}" + (f", {self.role}." if self.role else ".")]
        if self.goal:
            lines.append(f"My goal: {self.goal}.")
        if not self.tools:
            lines.append("No language model is configured and I have no tools, so I can't answer open-ended requests.")
            return "\n".join(lines)
        lines += [
            ("No language model is configured, so I run a tool when your message starts with "
             f"its name and its arguments, for example `{_example_call(self.tools[0])}`."),
            "My tools:",
        ]
        lines += [f"- {t.name}: {t.description}" if t.description else f"- {t.name}" for t in self.tools]
        return "\n".join(lines)


def _check_unique(agent: str, tools: tuple[FunctionTool, ...]) -> None:
    names = [t.name for t in tools]
    if duplicates := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"agent {agent!r}: two tools are named {', '.join(duplicates)}")


def _example_call(tool: FunctionTool) -> str:
    required = tool.input_schema().get("required", [])
    return " ".join([tool.name, *(f"{name}=..." for name in required)])
