"""``AgentTeam``: agents that work on a request one after another.

Each step's agent gets the step's description, the user's request and the previous
step's output. Every output but the last becomes an artifact named after its step;
the last step's output is streamed as the team's reply. A member's other events
(artifacts, tool calls, usage, a question for the user) pass through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace

from cleveragents.a2a import extensions as a2a_extensions
from cleveragents.a2a.cards import SkillSpec
from cleveragents.a2a.extensions import AgentExtension
from cleveragents.domain.actor import (
    Actor,
    ActorEvent,
    ArtifactChunk,
    InputRequired,
    TextChunk,
    Turn,
)
from cleveragents.domain.replies import ReplyAs
from cleveragents.domain.task import Artifact, Message, Part, Role
from cleveragents.ids import new_id


@dataclass(frozen=True, slots=True)
class Task:
    """One step of a team's work (also importable as ``TeamTask``); ``name`` defaults
    to the description and names the step's artifact."""

    description: str
    agent: Actor
    expected_output: str = ""
    name: str = ""

    @property
    def title(self) -> str:
        return self.name or self.description or self.agent.name


TeamTask = Task


class AgentTeam:
    """Runs ``tasks`` in order; with no tasks, runs each agent on the previous output."""

    def __init__(self, agents: Sequence[Actor], tasks: Sequence[Task] | None = None, name: str = "",
                 reply_as: ReplyAs | str = ReplyAs.ARTIFACT):
        self.agents = tuple(agents)
        if not self.agents:
            raise ValueError("a team needs at least one agent")
        self.tasks = tuple(tasks) if tasks else tuple(Task("", agent) for agent in self.agents)
        for step in self.tasks:
            if not any(step.agent is agent for agent in self.agents):
                raise ValueError(f"the agent of step {step.title!r} ({step.agent.name}) is not in the team")
        self.name = name or " & ".join(agent.name for agent in self.agents)
        self.reply_as = ReplyAs.parse(reply_as)  # the last step's output, as the team's reply
        # The members' extensions: a request to the team reaches each of them.
        self.extensions: tuple[AgentExtension, ...] = a2a_extensions.merge(
            *(getattr(agent, "extensions", ()) for agent in self.agents))

    def __repr__(self) -> str:
        return f"AgentTeam({self.name!r})"

    @property
    def description(self) -> str:
        return "A team of " + ", ".join(agent.name for agent in self.agents)

    def skills(self) -> list[SkillSpec]:
        """The members' skills; when two share an id, the first member's is kept."""
        merged: dict[str, SkillSpec] = {}
        for agent in self.agents:
            for skill in getattr(agent, "skills", list)():
                merged.setdefault(skill.id, skill)
        return list(merged.values())

    async def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        request = turn.message.text()
        previous: tuple[str, str] | None = None  # (step title, its output)
        for index, step in enumerate(self.tasks):
            last = index == len(self.tasks) - 1
            output: list[str] = []
            async for event in step.agent.respond(self._step_turn(turn, step, request, previous)):
                if isinstance(event, TextChunk):
                    if last:
                        yield event
                    else:
                        output.append(event.text)
                else:
                    yield event
                    if isinstance(event, InputRequired):
                        return  # the task waits for the user; the next message starts over
            if not last:
                text = "".join(output)
                artifact = Artifact(f"{turn.task_id}-step-{index + 1}", (Part.of_text(text),), name=step.title)
                yield ArtifactChunk(artifact)
                previous = (step.title, text)

    def _step_turn(self, turn: Turn, step: Task, request: str, previous: tuple[str, str] | None) -> Turn:
        text = _step_input(step, request, previous)
        files_and_data = tuple(part for part in turn.message.parts if part.text is None)
        message = Message(new_id(), Role.USER, (Part.of_text(text), *files_and_data), turn.context_id, turn.task_id)
        return replace(turn, message=message)


def _step_input(step: Task, request: str, previous: tuple[str, str] | None) -> str:
    if not step.description:  # no tasks given: the chain of agents
        return previous[1] if previous else request
    sections = [step.description]
    if step.expected_output:
        sections.append(f"Expected output: {step.expected_output}")
    sections.append(f"Request: {request}")
    if previous is not None:
        sections.append(f"Output of the previous step ({previous[0]}):\n{previous[1]}")
    return "\n\n".join(sections)
