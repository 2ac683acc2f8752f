"""One turn of a task: its actor runs, and what the actor produces changes the task.

``TaskService`` starts, resumes and cancels runs; ``TurnRecorder`` turns the events of
one actor turn (text, artifacts, a question, tool calls, usage) into changes of the
run's task. Every change goes through the service's ``update``, so the run's lock, the
store and the terminal-state rule stay the service's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Protocol

from cleveragents import tracing
from cleveragents.app.direct_replies import PrimedActor
from cleveragents.app.ports import ChosenActor
from cleveragents.app.task_runs import TaskRun, WriteFailed, add_usage, agent_message, with_budget_error
from cleveragents.domain.actor import (
    TOOL_CALL_KEY,
    Actor,
    ArtifactChunk,
    DirectReply,
    InputRequired,
    TextChunk,
    ToolCall,
    Turn,
    Usage,
)
from cleveragents.domain.errors import BudgetExceededError, failure_reason
from cleveragents.domain.json_limits import json_size
from cleveragents.domain.replies import ReplyAs, TaskRejected, reply_as_of
from cleveragents.domain.task import (
    Artifact,
    Part,
    StreamItem,
    Task,
    TaskArtifactUpdate,
    TaskState,
    TaskStatusUpdate,
)
from cleveragents.ids import new_id, utc_now

logger = logging.getLogger(__name__)

# What one turn may produce: an actor's stream has bounded events but no bound on their
# number, and the task keeps them all. Characters of text and names and bytes of files,
# metadata's JSON included; and parts of artifacts other than the text reply (an
# artifact without parts counts as one), each of which costs a walk over those before it.
MAX_REPLY_CHARS = 64 * 1024 * 1024
MAX_REPLY_PARTS = 10_000


def _size(part: Part) -> int:
    """Characters of text and names, bytes of a file, and JSON's size for data."""
    size = len(part.media_type or "") + len(part.filename or "") + _metadata_size(part.metadata)
    if part.text is not None:
        return size + len(part.text)
    if part.raw is not None:
        return size + len(part.raw)
    if part.has_data:
        return size + json_size(part.data)
    return size + len(part.url or "")


def _artifact_size(artifact: Artifact) -> int:
    return (sum(_size(part) for part in artifact.parts) + len(artifact.name or "") + len(artifact.description or "")
            + _metadata_size(artifact.metadata) + sum(len(extension) for extension in artifact.extensions))


def _metadata_size(metadata: dict[str, object] | None) -> int:
    return json_size(metadata) if metadata else 0


class _ReplyText:
    """A streamed reply's text as the task keeps it while it streams: few parts, not one
    per chunk, whose every append would copy all the parts before it (a reply of 100,000
    chunks took 37 s of the event loop, against 2 s). A chunk joins the parts before it
    that are no longer than it, as a binary counter carries, so n chunks are O(log n)
    parts and each character is copied O(log n) times."""

    def __init__(self) -> None:
        self._texts: list[str] = []

    def add(self, text: str, *, first: bool, last: bool) -> tuple[Part, ...]:
        """The parts of the text so far, ``text`` added (``first``: the text so far is
        only ``text``); one part once the reply ends (``last``)."""
        if first:
            self._texts.clear()
        self._texts.append(text)
        if last:
            self._texts[:] = ["".join(self._texts)]
        while len(self._texts) > 1 and len(self._texts[-2]) <= len(self._texts[-1]):
            tail = self._texts.pop()
            self._texts[-1] += tail
        return tuple(Part.of_text(text) for text in self._texts)


class _ReplySize:
    """Counts what a turn produced; past ``MAX_REPLY_CHARS`` or ``MAX_REPLY_PARTS`` the
    turn is over budget."""

    def __init__(self) -> None:
        self.chars = self.parts = 0

    def add(self, chars: int, parts: int = 0) -> None:
        self.chars += chars
        self.parts += parts
        if self.chars > MAX_REPLY_CHARS:
            raise BudgetExceededError(f"the reply passed {MAX_REPLY_CHARS} characters",
                                      {"limit": "max_reply_chars", "max": MAX_REPLY_CHARS})
        if self.parts > MAX_REPLY_PARTS:
            raise BudgetExceededError(f"the reply passed {MAX_REPLY_PARTS} artifact parts",
                                      {"limit": "max_reply_parts", "max": MAX_REPLY_PARTS})


class Update(Protocol):
    """``TaskService._update``: change the run's task; False once it is terminal."""

    def __call__(self, run: TaskRun, change: Callable[[Task], Task], broadcast: bool = ...,
                 persist: bool = ...) -> Awaitable[bool]: ...


Emit = Callable[[TaskRun, StreamItem], None]


class TurnRecorder:
    def __init__(self, update: Update, emit: Emit, default_actor: Callable[[], Actor], reply_as: ReplyAs | None):
        """``reply_as``: how every text reply is delivered, whatever the actor's own
        choice (the endpoint's, ``A2A(reply_as=...)``)."""
        self._change = update
        self._emit = emit
        self._default_actor = default_actor
        self._reply_as = reply_as

    async def traced(self, run: TaskRun, turn: Turn, choice: ChosenActor | None,
                     actor: Actor | PrimedActor | None) -> None:
        """``respond`` in a span of its own: one per turn."""
        chosen = actor or (choice.actor if choice is not None else self._default_actor())
        attributes = {tracing.TASK_ID: run.task.id, tracing.CONTEXT_ID: run.task.context_id,
                      tracing.ACTOR: getattr(chosen, "name", None) or type(chosen).__name__}
        with tracing.span("task.turn", "internal", attributes) as span:
            await self.respond(run, turn, choice, actor)
            state = run.task.state
            span.set_attribute(tracing.TASK_STATE, state.value)
            if state is TaskState.FAILED:
                tracing.failed(span, "the task failed")

    async def respond(self, run: TaskRun, turn: Turn, choice: ChosenActor | None,
                       actor: Actor | PrimedActor | None = None) -> None:
        """Run the actor (``actor``, else the choice's, else ours) on the turn, recording
        what it produces."""
        chunks: list[str] = []
        response_id = f"{run.task.id}-response-{len(run.task.history)}"
        held: str | None = None
        used = Usage()
        size = _ReplySize()
        reply = _ReplyText()
        # Asked of the actor itself: a primed one stands in for it.
        delivery = self._reply_as or reply_as_of(choice.actor if choice is not None else self._default_actor())
        if actor is None:
            actor = choice.actor if choice is not None else self._default_actor()
        try:
            if run.task.state is TaskState.SUBMITTED:
                await self._change(run, lambda t: t.transition(TaskState.WORKING, utc_now()), persist=False)
            # Closed on the way out, so an actor stopped early (budget, cancel) closes its streams.
            events = actor.respond(turn)
            try:
                async for event in events:
                    if isinstance(event, DirectReply):  # too late to be the whole answer: its text is part of it
                        event = TextChunk(event.message.text())
                    if isinstance(event, TextChunk):
                        size.add(len(event.text))
                        if held is not None:
                            if delivery.artifact:
                                await self._artifact(run, reply, response_id, held, append=bool(chunks), last=False)
                            chunks.append(held)
                        held = event.text
                    elif isinstance(event, ArtifactChunk):
                        # An artifact without parts still costs a walk over those before it.
                        size.add(_artifact_size(event.artifact), max(1, len(event.artifact.parts)))
                        await self._add_artifact(run, event.artifact, event.append, event.last_chunk)
                    elif isinstance(event, InputRequired):
                        prompt = event.prompt
                        if held is not None:  # the text before the question is part of the reply
                            if delivery.artifact:
                                await self._artifact(run, reply, response_id, held, append=bool(chunks), last=True)
                            else:
                                prompt = "".join((*chunks, held)) + "\n\n" + prompt
                        state = TaskState.AUTH_REQUIRED if event.auth else TaskState.INPUT_REQUIRED
                        await self._finish(run, state, prompt)
                        return
                    elif isinstance(event, ToolCall):
                        await self._tool_called(run, event)
                    elif isinstance(event, Usage):
                        await self._change(run, partial(add_usage, usage=event), broadcast=False, persist=False)
                        used = used + event
                        if choice is not None:
                            choice.check(used)
            finally:
                if (aclose := getattr(events, "aclose", None)) is not None:
                    await aclose()
            if held is not None:
                if delivery.artifact:
                    await self._artifact(run, reply, response_id, held, append=bool(chunks), last=True)
                chunks.append(held)
            await self._finish(run, TaskState.COMPLETED, "".join(chunks) if chunks else None,
                               status_message=delivery.message)
        except (TaskRejected, BudgetExceededError) as stopped:
            # What the actor produced so far stays: the text streamed, the artifacts.
            if delivery.artifact:
                if held is not None:
                    await self._artifact(run, reply, response_id, held, append=bool(chunks), last=True)
            elif chunks or held is not None:  # the reply never streamed: it is the artifact now
                text = "".join((*chunks, held or ""))
                await self._artifact(run, reply, response_id, text, append=False, last=True)
            if isinstance(stopped, TaskRejected):
                await self._finish(run, TaskState.REJECTED, stopped.reason)
                return
            over = stopped
            await self._change(run, partial(with_budget_error, exc=over), broadcast=False, persist=False)
            await self._finish(run, TaskState.FAILED, f"BudgetExceededError: {over.message}")
        except WriteFailed as failed:  # the store's error, not the actor's: the send's answer
            raise failed.cause from None
        except Exception as exc:
            logger.warning("task %s failed", run.task.id, exc_info=exc)
            await self._finish(run, TaskState.FAILED, failure_reason(exc))

    async def _tool_called(self, run: TaskRun, call: ToolCall) -> None:
        """Tell the stream's listeners that the actor called a tool: a working status
        update whose metadata holds the call. Not stored: the reply says what it did."""
        if run.heard and not run.task.terminal:
            shown = await asyncio.to_thread(call.shown, new_id())  # a big result is cut off the loop
            self._emit(run, TaskStatusUpdate(run.task.id, run.task.context_id, run.task.status, final=False,
                                             metadata={TOOL_CALL_KEY: shown}))

    async def _artifact(self, run: TaskRun, reply: _ReplyText, artifact_id: str, text: str, append: bool,
                        last: bool) -> None:
        """The reply's next chunk: listeners get the chunk, the task keeps the text so far
        (once the reply ends, as one part)."""
        whole = Artifact(artifact_id, reply.add(text, first=not append, last=last), name="response")
        chunk = Artifact(artifact_id, (Part.of_text(text),), name="response")
        await self._add_artifact(run, chunk, append, last, keep=whole)

    async def _add_artifact(self, run: TaskRun, artifact: Artifact, append: bool, last: bool,
                            keep: Artifact | None = None) -> None:
        """``keep``: the whole artifact the task holds from now on, when ``artifact`` is
        a chunk of it."""
        def change(task: Task) -> Task:
            return task.with_artifact(artifact, append) if keep is None else task.with_artifact(keep)

        if await self._change(run, change, broadcast=False, persist=False) and run.heard:
            self._emit(run, TaskArtifactUpdate(run.task.id, run.task.context_id, artifact, append, last))

    async def _finish(self, run: TaskRun, state: TaskState, text: str | None, status_message: bool = False) -> None:
        """End the turn in ``state``, with ``text`` as the agent's message: in the history,
        and as the status message unless the task completed (then if ``status_message``)."""
        def change(task: Task) -> Task:
            now = utc_now()
            if text is None:
                return task.transition(state, now)
            reply = agent_message(task, text)
            shown = reply if status_message or state is not TaskState.COMPLETED else None
            return task.answered(reply, state, now, shown)

        if await self._change(run, change, broadcast=False) and run.heard:
            self._emit(run, TaskStatusUpdate(run.task.id, run.task.context_id, run.task.status, final=True))

