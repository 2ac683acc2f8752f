"""How a task's reply reaches the client, and an actor's refusal of a task.

An actor's text reply is delivered as the task's ``response`` artifact (the default),
as the message of its final status (``status.message``), or both. In every case the
reply is also the agent's message in the task's history. An actor declares its choice
with a ``reply_as`` attribute; an actor without one delivers artifacts.

``TaskRejected``, raised by an actor (a handler, for a published agent), ends the task
as rejected: the agent won't do it, which is not a failure.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class ReplyAs(str, Enum):
    ARTIFACT = "artifact"
    MESSAGE = "message"
    BOTH = "both"

    @property
    def artifact(self) -> bool:
        return self is not ReplyAs.MESSAGE

    @property
    def message(self) -> bool:
        return self is not ReplyAs.ARTIFACT

    @classmethod
    def parse(cls, value: ReplyAs | str) -> ReplyAs:
        """``value`` as a ``ReplyAs``; ``ValueError`` naming the choices otherwise."""
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(member.value) for member in cls)
            raise ValueError(f"reply_as is one of {choices}, not {value!r}") from None


def reply_as_of(actor: Any) -> ReplyAs:
    """How ``actor`` wants its replies delivered: its ``reply_as`` (a ``ReplyAs`` or its
    value); anything else there is not a choice, and gives the default."""
    value = getattr(actor, "reply_as", None)
    if value is None:  # most actors: asked of every turn
        return ReplyAs.ARTIFACT
    if isinstance(value, ReplyAs):
        return value
    return next((choice for choice in ReplyAs if choice.value == value), ReplyAs.ARTIFACT)


class TaskRejected(Exception):
    """Raised by an actor that won't do the task: the task ends in the ``rejected``
    state, with ``reason`` as its status message."""

    def __init__(self, reason: str = "The agent rejected the task") -> None:
        super().__init__(reason)
        self.reason = reason
