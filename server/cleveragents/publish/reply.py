"""``AgentReply``: what ``Agent.start`` answers.

It is the reply's text (a ``str``, so a text reply prints, compares and splits as
before) and carries what came with it: the artifacts the agent made (parts, a list of
parts, an ``Artifact``, a ``dict``), the parts of a ``Message`` reply, and the question
when the agent asked one. A handler that answers with parts alone gives an empty text
and its parts in ``parts``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cleveragents.domain.actor import ArtifactChunk, InputRequired
from cleveragents.domain.task import Artifact, Message, Part


class AgentReply(str):
    """The reply's text, with ``artifacts``, ``message`` (a ``Message`` reply, which
    makes no task), ``input_required`` (the question, when the agent asked one:
    the text is then its prompt) and ``parts``."""

    artifacts: tuple[Artifact, ...]
    message: Message | None
    input_required: InputRequired | None

    def __new__(cls, text: str = "", *, artifacts: Iterable[Artifact] = (), message: Message | None = None,
                input_required: InputRequired | None = None) -> AgentReply:
        reply = super().__new__(cls, text)
        reply.artifacts = tuple(artifacts)
        reply.message = message
        reply.input_required = input_required
        return reply

    @property
    def text(self) -> str:
        return str.__str__(self)

    @property
    def parts(self) -> tuple[Part, ...]:
        """Every part that is not the text: a ``Message`` reply's files and data, then
        each artifact's parts, in the order they came."""
        extra = tuple(part for part in self.message.parts if part.kind != "text") if self.message else ()
        return extra + tuple(part for artifact in self.artifacts for part in artifact.parts)

    def __repr__(self) -> str:
        fields = [("parts", list(self.parts)), ("input_required", self.input_required)]
        extra = "".join(f", {name}={value!r}" for name, value in fields if value)
        return f"AgentReply({self.text!r}{extra})" if extra else repr(self.text)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (self.text, self.artifacts, self.message, self.input_required)


def _rebuilt(text: str, artifacts: tuple[Artifact, ...], message: Message | None,
             input_required: InputRequired | None) -> AgentReply:
    return AgentReply(text, artifacts=artifacts, message=message, input_required=input_required)


def collect_artifact(artifacts: list[Artifact], chunk: ArtifactChunk) -> None:
    """Add ``chunk`` to ``artifacts`` as a task keeps it: a chunk that appends to an
    artifact already there extends its parts, one with the same id replaces it."""
    for index, known in enumerate(artifacts):
        if known.artifact_id == chunk.artifact.artifact_id:
            artifacts[index] = (Artifact(known.artifact_id, known.parts + chunk.artifact.parts, known.name,
                                         known.description, known.metadata, known.extensions)
                                if chunk.append else chunk.artifact)
            return
    artifacts.append(chunk.artifact)
