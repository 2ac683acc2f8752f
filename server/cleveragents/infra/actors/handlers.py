"""User code as an actor: a function, an async function or an (async) generator.

What ``cleveragents.Agent(handler=...)`` and the ``python/<module>:<callable>`` actor
share. A handler takes the message text, or the text and the turn; what it returns
or yields may be text, a dict (a data artifact), a ``Part`` or a list of parts (an
artifact of them), an ``Artifact``, a ``Message`` (the answer as a message alone, when
it comes first) or any actor event.
Synchronous code runs in a pool of its own, so a handler that blocks neither stalls
the event loop nor queues behind the server's file I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from cleveragents.domain.actor import (
    ActorEvent,
    ArtifactChunk,
    DirectReply,
    InputRequired,
    ReplyMessage,
    TextChunk,
    ToolCall,
    Turn,
    Usage,
)
from cleveragents.domain.task import Artifact, Message, Part
from cleveragents.ids import new_id

T = TypeVar("T")
Handler = Callable[..., Any]
MAX_THREADS = 64
EVENT_TYPES = (TextChunk, ArtifactChunk, InputRequired, ToolCall, Usage)
_DONE = object()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="agent-code")
        return _pool


async def run_user_code(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    call = functools.partial(fn, *args, **kwargs) if kwargs else functools.partial(fn, *args)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)


def takes_turn(handler: Handler) -> bool:
    """Whether the handler takes (text, turn) rather than the text alone."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it the text only
        return False
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    return sum(1 for p in params if p.kind in positional) >= 2


def runs_on_loop(handler: Handler) -> bool:
    """Whether the handler is async (a coroutine or async generator function): it runs
    on the event loop; anything else runs in a worker thread."""
    return inspect.iscoroutinefunction(handler) or inspect.isasyncgenfunction(handler)


def streams(handler: Handler) -> bool:
    """Whether the handler is a generator function (async or not): it yields its answer
    piece by piece rather than returning it."""
    return inspect.isasyncgenfunction(handler) or inspect.isgeneratorfunction(handler)


async def handler_events(handler: Handler, turn: Turn, with_turn: bool,
                         on_loop: bool | None = None) -> AsyncIterator[ActorEvent]:
    """Run ``handler`` on ``turn`` and give what it produces as actor events.
    ``on_loop``: ``runs_on_loop(handler)``, when the caller has worked it out once."""
    args = (turn.message.text(), turn) if with_turn else (turn.message.text(),)
    if runs_on_loop(handler) if on_loop is None else on_loop:
        result = handler(*args)
    else:
        result = await run_user_code(handler, *args)  # a sync handler never blocks the loop
    if inspect.isawaitable(result):
        result = await result
    if type(result) is str:  # the usual reply, without the checks below
        yield TextChunk(result)
    elif isinstance(result, AsyncIterator):
        async for item in result:
            for event in as_events(item):
                yield event
    elif isinstance(result, Iterator):
        async for item in _in_thread(result):
            for event in as_events(item):
                yield event
    else:
        for event in as_events(result):
            yield event


def as_events(value: Any) -> Iterator[ActorEvent]:
    """What a handler yields or returns, as actor events."""
    if value is None:
        return
    if isinstance(value, str):
        yield TextChunk(value)
    elif isinstance(value, EVENT_TYPES):
        yield value
    elif isinstance(value, ReplyMessage):
        yield DirectReply(value.to_message())
    elif isinstance(value, Message):
        yield DirectReply(value)
    elif isinstance(value, Artifact):
        yield ArtifactChunk(value)
    elif isinstance(value, dict):
        yield ArtifactChunk(Artifact(new_id(), (Part.of_data(value),), name="data"))
    elif isinstance(value, Part):
        yield ArtifactChunk(Artifact(new_id(), (value,), name="response"))
    elif isinstance(value, list | tuple) and value and all(isinstance(item, Part) for item in value):
        yield ArtifactChunk(Artifact(new_id(), tuple(value), name="response"))
    else:
        raise TypeError(f"a handler gives str, dict, a part or a list of parts, Artifact, ArtifactChunk, "
                        f"InputRequired or Message, not {_described(value)}")


def _described(value: Any) -> str:
    if isinstance(value, list | tuple) and value:
        return f"a {type(value).__name__} of {', '.join(sorted({type(item).__name__ for item in value}))}"
    return type(value).__name__


async def _in_thread(items: Iterator[Any]) -> AsyncIterator[Any]:
    """A sync generator's items, each produced in a worker thread."""
    try:
        while (item := await run_user_code(next, items, _DONE)) is not _DONE:
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            with contextlib.suppress(ValueError):  # still running in its thread after a cancel
                close()
