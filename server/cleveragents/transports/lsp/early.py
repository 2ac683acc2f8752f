"""A2A requests answered before pygls has loaded.

On a cold start the services and pygls both take a few hundred milliseconds to
import, one after the other (the GIL). The services come first: once ``initialize``
is answered (``handshake.py``), a request that needs nothing of the LSP layer is
answered as soon as they are ready, while pygls loads behind it.

Such a request is one of the method table's with no resume point (the event feed,
whose live stream after the answer the pygls server pumps), no progress token
(``workDoneToken``, whose cancel is the pygls server's) and no use of the caller's
editor (a plan's apply and rollback, which go through ``workspace/applyEdit``): an
editor's first ``message/stream`` or SendMessage, say. A stream's items go to the
same pipe as notifications, before its answer. The first frame of any other kind
ends this phase: it and every frame after it go to the pygls server in their order,
and requests still running here are handed over to it (so ``$/cancelRequest``,
``shutdown`` and ``exit`` find them, and a stream goes on).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from cleveragents.a2a import envelope, methods
from cleveragents.transports.lsp.calls import Connection, WireResponse, answer_call, cancel_and_wait
from cleveragents.transports.lsp.early_health import EarlyHealth
from cleveragents.transports.lsp.framing import FrameError, Frames, encode_frame, frame_body
from cleveragents.transports.lsp.pipe_writer import PipeWriter
from cleveragents.transports.runtime import ServiceRuntime

logger = logging.getLogger("cleveragents.lsp")

Frame = bytes | FrameError | None  # None: end of input


def _early_request(message: dict[str, Any]) -> bool:
    spec = methods.get(message["method"])
    params = message.get("params")
    return (spec is not None and not spec.uses_editor and spec.resume_param is None
            and (params is None or (isinstance(params, dict) and "workDoneToken" not in params)))


# What ``EarlyCalls.take`` did with a frame; ``None``: it is the pygls server's.
TAKEN = "taken"  # answered (or cancelled) here
HELD = "held"  # ``initialized``: kept for the pygls server, the phase goes on


class EarlyCalls:
    """The requests answered before the pygls server takes over."""

    def __init__(self, runtime: ServiceRuntime, connection: Connection, writer: PipeWriter,
                 health: EarlyHealth | None = None):
        self._runtime = runtime
        self._health = health
        self._connection = connection
        self._writer = writer
        self._running: dict[Any, tuple[str, asyncio.Task[WireResponse]]] = {}
        self._handed_over = False

    def take(self, frame: Frame) -> str | None:
        """``TAKEN`` when ``frame`` is a request this phase answers (or the cancel of
        one it runs), ``HELD`` for ``initialized``, else ``None``."""
        if not isinstance(frame, bytes) or self._writer.gave_up is not None:
            return None  # a client that stopped reading is given up on by the pygls server
        incoming = envelope.read(frame)
        message = incoming.message
        if incoming.refusal is None and incoming.kind == "notification":
            if message["method"] == "$/cancelRequest":
                return TAKEN if self._cancel(message.get("params")) else None
            return HELD if message["method"] == "initialized" else None
        if incoming.refusal is not None or incoming.kind != "request" or message["id"] in self._running \
                or not _early_request(message):
            return None
        msg_id, method, params = message["id"], message["method"], message.get("params")
        if self._health is not None and self._health.takes(method, params, self._connection.extensions):
            task = asyncio.ensure_future(self._health_check(method, params, msg_id))
        else:
            task = asyncio.ensure_future(self._call(method, params, msg_id))
        self._running[msg_id] = (method, task)
        task.add_done_callback(lambda done: self._answer(msg_id, done))
        logger.debug("answering %s before the LSP layer has loaded", method)
        return TAKEN

    def _call(self, method: str, params: Any, msg_id: Any) -> Awaitable[WireResponse]:
        return answer_call(self._runtime, self._connection, method, params, msg_id,
                           notify=self._notify, attach=_close_stream)

    async def _health_check(self, method: str, params: Any, msg_id: Any) -> WireResponse:
        assert self._health is not None
        answer = await self._health.answer(self._runtime, msg_id)
        return answer if answer is not None else await self._call(method, params, msg_id)

    def _cancel(self, params: Any) -> bool:
        """Cancel one of these requests; the pygls server answers it as it answers a
        cancelled one (``hand_over``)."""
        msg_id = params.get("id") if isinstance(params, dict) else None
        running = self._running.get(msg_id) if type(msg_id) in (str, int) else None
        if running is None:
            return False
        running[1].cancel()
        return True

    def _answer(self, msg_id: Any, task: asyncio.Task[WireResponse]) -> None:
        if self._handed_over or task.cancelled():  # the pygls server answers it, a cancel as it answers one
            return
        self._running.pop(msg_id, None)
        answer = task.result()
        self._writer.write(frame_body(answer.body) if answer.body is not None else encode_frame(answer.payload or {}))

    def _notify(self, method: str, params: Any) -> None:
        self._writer.write(encode_frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def cancel_all(self) -> None:
        """Stopping before the hand-over: cancel the requests still running here."""
        await cancel_and_wait([task for _, task in self.hand_over().values()])

    def hand_over(self) -> dict[Any, tuple[str, asyncio.Task[WireResponse]]]:
        """The requests still running, for the pygls server to answer."""
        self._handed_over = True
        running, self._running = self._running, {}
        return running


class Backlog:
    """The input as the pygls server reads it: the frames read ahead of it first,
    then a read still in progress, then the rest."""

    def __init__(self, frames: Frames, ahead: list[Frame], reading: asyncio.Future[Frame] | None):
        self._frames = frames
        self._ahead = ahead
        self._reading = reading

    async def next(self) -> Frame:
        if self._ahead:
            return self._ahead.pop(0)
        if self._reading is not None:
            reading, self._reading = self._reading, None
            return await reading
        return await self._frames.next()


async def serve_until_loaded(frames: Frames, calls: EarlyCalls, loaded: Awaitable[Any]) -> Backlog:
    """Answer early requests until ``loaded`` is done or a frame needs the pygls
    server; ``initialized`` is held for the server without ending this phase."""
    ahead: list[Frame] = []
    loading = asyncio.ensure_future(loaded)
    while True:
        reading = asyncio.ensure_future(frames.next())
        await asyncio.wait({reading, loading}, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done():
            return Backlog(frames, ahead, reading)
        frame = reading.result()
        taken = calls.take(frame)
        if taken != TAKEN:
            ahead.append(frame)
            if taken != HELD:
                return Backlog(frames, ahead, None)
        if loading.done():
            return Backlog(frames, ahead, None)


def _close_stream(msg_id: Any, subscription_id: str, events: Any) -> None:
    # No live stream after an answer is started here: the event feed has a resume point
    # (``_early_request``).
    events.close()
