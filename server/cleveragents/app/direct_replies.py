"""Answers that are a message, not a task.

An actor that may answer a new message with a message alone (``replies_directly``)
is asked before any task exists: its first event decides. A ``DirectReply`` is the
whole answer, and no task is stored; anything else starts the task as usual, with
that first event handed on, so nothing the actor produced is lost or produced twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from cleveragents.domain.actor import ActorEvent, DirectReply, Turn
from cleveragents.domain.task import Message, Role
from cleveragents.ids import new_id


def replies_directly(actor: Any) -> bool:
    return bool(getattr(actor, "replies_directly", False))


class FirstEvent:
    """An actor's event stream with its first event read: iterating gives every event,
    that one included; an error the first read raised comes out where it would have."""

    def __init__(self, events: AsyncIterator[ActorEvent]) -> None:
        self._events = events
        self._first: ActorEvent | None = None
        self._error: BaseException | None = None
        self._ended = False

    @classmethod
    async def read(cls, actor: Any, turn: Turn) -> FirstEvent:
        self = cls(actor.respond(turn))
        try:
            self._first = await anext(self._events)
        except StopAsyncIteration:
            self._ended = True
        except Exception as exc:  # the task that starts reports it, as a failure
            self._error = exc
        except BaseException:  # cancelled while it thought: nothing more will read it
            await asyncio.shield(self.aclose())
            raise
        return self

    @property
    def reply(self) -> DirectReply | None:
        return self._first if isinstance(self._first, DirectReply) else None

    async def events(self) -> AsyncIterator[ActorEvent]:
        try:
            if self._error is not None:
                raise self._error
            if self._ended:
                return
            assert self._first is not None
            yield self._first
            async for event in self._events:
                yield event
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        if (aclose := getattr(self._events, "aclose", None)) is not None:
            with contextlib.suppress(Exception):
                await aclose()


class PrimedActor:
    """Answers the turn it was asked already with the events read so far and the rest."""

    def __init__(self, events: FirstEvent) -> None:
        self._events = events

    def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        return self._events.events()


def answer_message(reply: DirectReply, context_id: str) -> Message:
    """The reply as sent: the agent's, in the request's context, in no task."""
    message = reply.message
    return replace(message, message_id=message.message_id or new_id(), role=Role.AGENT,
                   context_id=context_id, task_id=None)
