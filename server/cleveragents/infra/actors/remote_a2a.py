"""``a2a/<url>``: a remote A2A agent, through the outbound A2A client.

Each turn is one ``SendStreamingMessage`` to the remote agent. Its text artifacts are
relayed as the reply's text as they stream, other artifacts as artifacts; a remote
task that asks for input makes this task ask the same, and the answer (the next
message on this task) goes to that remote task. The client is built per turn by the
factory the composition root gives (the protocol layer owns the client), and it is
closed when the turn ends; a turn cancelled, or stopped early (over a limit), cancels
the remote task too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

from cleveragents.domain.actor import ActorError, ActorEvent, ArtifactChunk, InputRequired, TextChunk, Turn
from cleveragents.domain.errors import StructuredError
from cleveragents.domain.replies import TaskRejected
from cleveragents.domain.task import Message, Role, Task, TaskArtifactUpdate, TaskState, TaskStatusUpdate
from cleveragents.ids import new_id

MAX_REMEMBERED = 1024  # local task -> remote task, for answers to input-required
CANCEL_SECONDS = 5.0


@dataclass
class _Seen:
    """What a turn learnt of the remote task so far."""

    task_id: str | None
    texts: int = 0
    settled: bool = False  # the remote task ended, or waits for input: nothing to cancel
    streamed: str | None = None  # the task this turn's stream is about, from its first item


class RemoteA2aActor:
    def __init__(self, name: str, url: str, client: Callable[[], Any]):
        self.name = name
        self.url = url
        self._client = client
        # Our task id -> (remote task id, remote context id), for a task waiting for input.
        self._waiting: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._contexts: OrderedDict[str, str] = OrderedDict()  # our context -> the remote one

    async def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        remote_task, remote_context = self._waiting.pop(turn.task_id, (None, self._contexts.get(turn.context_id)))
        message = replace(turn.message, message_id=new_id(), role=Role.USER, task_id=remote_task,
                          context_id=remote_context, reference_task_ids=())
        client = self._client()
        seen = _Seen(remote_task)
        try:
            async with client, contextlib.aclosing(client.stream(message)) as items:
                try:
                    async for event in self._relay(turn, items, seen):
                        yield event
                except (asyncio.CancelledError, GeneratorExit):
                    # This turn was cancelled, or stopped early (over a limit): so is the remote task.
                    if seen.task_id is not None and not seen.settled:
                        with contextlib.suppress(Exception):
                            await asyncio.wait_for(client.cancel(seen.task_id), CANCEL_SECONDS)
                    raise
        except ActorError:
            raise
        except StructuredError as exc:  # the client's refusals: unreachable, HTTP errors, remote errors
            raise ActorError(f"{self.name}: {exc.message}", {
                **exc.data, "actor": self.name, "reason": "remote_error", "url": self.url,
                "error": type(exc).__name__}) from None

    async def _relay(self, turn: Turn, items: AsyncIterator[Any], seen: _Seen) -> AsyncIterator[ActorEvent]:
        async for item in items:
            if isinstance(item, Message):  # a direct reply: the turn is over
                seen.settled = True
                yield TextChunk(item.text())
                return
            if isinstance(item, TaskArtifactUpdate):
                self._pin(seen, item.task_id)
                event = _artifact_event(item)
                seen.texts += isinstance(event, TextChunk)
                yield event
                continue
            if not isinstance(item, (Task, TaskStatusUpdate)):
                continue
            seen.task_id = self._pin(seen, item.id if isinstance(item, Task) else item.task_id)
            self._remember_context(turn.context_id, item.context_id)
            status = item.status
            text = status.message.text() if status.message is not None else ""
            if status.state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
                self._remember_waiting(turn.task_id, seen.task_id, self._contexts.get(turn.context_id, ""))
                seen.settled = True
                yield InputRequired(text or "The remote agent needs input", status.state is TaskState.AUTH_REQUIRED)
                return
            if status.state is TaskState.REJECTED:  # the remote agent won't do it: neither will we
                raise TaskRejected(f"{self.name}: " + (text or "the remote agent rejected the task"))
            if status.state in (TaskState.FAILED, TaskState.CANCELED):
                raise ActorError(f"{self.name}: the remote task is {status.state.value}" + (f": {text}" if text else ""),
                                 {"actor": self.name, "reason": status.state.value, "remote_task_id": seen.task_id})
            if status.state is TaskState.COMPLETED:
                seen.settled = True
                if text and not seen.texts:
                    yield TextChunk(text)
                return

    def _pin(self, seen: _Seen, task_id: str) -> str:
        """``task_id``, which must be the task of the stream's first item: an item about
        another task would put its artifacts in ours, or make it the task our answer
        (or a cancel) goes to."""
        if seen.streamed is None:
            seen.streamed = task_id
        elif task_id != seen.streamed:
            raise ActorError(f"{self.name}: the remote agent's stream for task {seen.streamed} has an item "
                             f"about task {task_id}", {"actor": self.name, "reason": "other_task",
                                                        "remote_task_id": seen.streamed, "other_task_id": task_id})
        return task_id

    def _remember_context(self, ours: str, theirs: str) -> None:
        if theirs:
            self._contexts[ours] = theirs
            self._contexts.move_to_end(ours)
            while len(self._contexts) > MAX_REMEMBERED:
                self._contexts.popitem(last=False)

    def _remember_waiting(self, ours: str, task_id: str, context_id: str) -> None:
        self._waiting[ours] = (task_id, context_id)
        while len(self._waiting) > MAX_REMEMBERED:
            self._waiting.popitem(last=False)


def _artifact_event(update: TaskArtifactUpdate) -> ActorEvent:
    parts = update.artifact.parts
    if parts and all(part.text is not None for part in parts):
        return TextChunk("".join(part.text or "" for part in parts))
    return ArtifactChunk(update.artifact, update.append, update.last_chunk)
