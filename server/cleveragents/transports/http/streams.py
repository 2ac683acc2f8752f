"""A streaming method (``MethodSpec.streaming``) run through the facade, with its items
read one by one for SSE.

The call runs in a task of its own, which encodes each item to JSON as it arrives and
queues it, so the bytes waiting for a client that stopped reading are known: past
``CLEVERAGENTS_MAX_OUTPUT_BUFFER`` (as on stdio) the call gives up on it, drops what
waits and cancels the call, and so the task. Closing the call early (the client went
away) cancels it too, but leaves the task running, for the client to subscribe again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import internal_error_payload
from cleveragents.a2a.facade import CallContext
from cleveragents.a2a.models import A2AResponse
from cleveragents.a2a.streams import StreamItem
from cleveragents.transports.http.sse import EventStreamResponse, ServerSentEvent, sse_event
from cleveragents.transports.output_limit import max_output_buffer_default

logger = logging.getLogger(__name__)

ITEM, ERROR, END = "item", "error", "end"
_DONE = object()


def resuming(message: dict[str, Any], headers: Any, param: str | None) -> dict[str, Any]:
    """A call that resumes (``MethodSpec.resume_param``) from the ``Last-Event-ID`` of
    a reconnecting SSE client: the header wins over the param."""
    last = (headers.get("last-event-id") or "").strip()
    params = message.get("params")
    if param is None or not last or not isinstance(params, dict):
        return message
    return {**message, "params": {**params, param: last}}


class StreamCall:
    def __init__(self, facade: Any, request: dict[str, Any], context: CallContext):
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._buffered = 0
        self._max_buffered = max_output_buffer_default()
        self._gave_up = False
        self._method = request.get("method")
        self._context = context
        self._task = asyncio.ensure_future(self._run(facade, request, context))
        self._task.add_done_callback(lambda _: self._queue.put_nowait(_DONE))
        self._ended = False

    async def _run(self, facade: Any, request: dict[str, Any], context: CallContext) -> A2AResponse | None:
        """The call's error response, if it has one."""
        call = await facade.open(request, context)
        response: A2AResponse | None = call.response
        if response is not None:
            return response
        try:
            async for item in call:
                self._on_item(item)
        finally:
            await call.aclose()
        return None if call.error is None else call.final_response()

    def _on_item(self, item: StreamItem) -> None:
        if self._gave_up:
            return
        text = json.dumps(item.payload, separators=(",", ":"))
        self._buffered += len(text)
        if self._buffered > self._max_buffered:
            self._give_up()
            return
        self._queue.put_nowait((item.event_id, text))

    def _give_up(self) -> None:
        self._gave_up = True
        logger.warning("%s: the client stopped reading its stream (more than %d bytes waiting); "
                       "cancelling its task", self._method, self._max_buffered)
        while not self._queue.empty():
            self._queue.get_nowait()
        self._buffered = 0
        # Not a dropped stream, which leaves its task running: output nobody reads would
        # only pile up in the task, so the task is ended with the stream.
        self._context.cancel_ends_task = True
        self._task.cancel()

    async def next(self) -> tuple[str, Any]:
        """``(ITEM, (event_id, json_text))``, then ``(ERROR, error)`` or ``(END, None)`` once."""
        if self._ended:
            return END, None
        value = await self._queue.get()
        if value is not _DONE:
            self._buffered -= len(value[1])
            return ITEM, value
        self._ended = True
        try:
            response = self._task.result()
        except asyncio.CancelledError:
            return END, None
        except Exception as exc:
            return ERROR, internal_error_payload(exc, dialects.EXTENSION, f"{self._method} (http stream)")
        if response is not None and response.error is not None:
            return ERROR, response.to_wire()["error"]
        return END, None

    async def first(self) -> tuple[str | None, str] | dict[str, Any]:
        """The first item, ``(event_id, json_text)``; else the call's error, once it is
        closed. A call that ends without an item or an error gets one: its client is
        owed at least one item."""
        kind, value = await self.next()
        if kind == ITEM:
            item: tuple[str | None, str] = value
            return item
        await self.close()
        return value if kind == ERROR else {"code": -32603, "message": "The stream ended early"}

    async def close(self) -> None:
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def item_event(value: tuple[str | None, str], frame: Callable[[str, Any], Any]) -> ServerSentEvent:
    """The SSE event of an item: its id is the item's event id, which ``Last-Event-ID``
    resumes from."""
    event_id, text = value
    return sse_event(frame(ITEM, text), id=event_id or None)


async def _no_more() -> AsyncIterator[ServerSentEvent]:
    return
    yield  # an async generator that yields nothing


def one_event(data: Any, event: str | None = None, headers: dict[str, str] | None = None) -> EventStreamResponse:
    """An event stream of one event: how a streaming call refused before its first
    item answers, since its client reads the event stream (a2a-sdk servers do the same)."""
    return EventStreamResponse(_no_more(), first=sse_event(data, event=event), headers=headers)


def sse_response(call: StreamCall, first: tuple[str | None, str], frame: Callable[[str, Any], Any],
                 error_event: str | None = None, headers: dict[str, str] | None = None) -> EventStreamResponse:
    """The SSE response of a call whose first item (``StreamCall.first``) was ``first``.
    ``frame(kind, value)`` makes the ``data`` of an item (from its JSON text) or of an
    error (a dict), JSON-RPC or REST shaped; an error is sent as an ``error_event``
    event when one is named. The first item goes out with the response's head, with
    ``headers``."""
    async def rest() -> AsyncIterator[ServerSentEvent]:
        while (next_item := await call.next())[0] != END:
            kind, value = next_item
            if kind == ERROR:
                yield sse_event(frame(kind, value), event=error_event)
                return
            yield item_event(value, frame)

    return EventStreamResponse(rest(), first=item_event(first, frame), on_close=call.close, headers=headers)
