"""Server-Sent Events: framing, and a response that notices a client going away.

The response pumps its events while it listens for ``http.disconnect``: when the
client leaves, the event iterator is closed at once (not at the next write), so the
task behind a stream is cancelled straight away. A comment line every
``heartbeat`` seconds keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

HEARTBEAT_SECONDS = 15.0
SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    # nginx: pass each event through as it is written.
    "X-Accel-Buffering": "no",
}


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    data: Any
    event: str | None = None
    id: str | None = None

    def encode(self) -> bytes:
        lines = []
        if self.event:
            lines.append(f"event: {self.event}")
        if self.id:
            lines.append(f"id: {self.id}")
        text = self.data if isinstance(self.data, str) else json.dumps(self.data, separators=(",", ":"))
        lines.extend(f"data: {line}" for line in text.split("\n"))
        return ("\n".join(lines) + "\n\n").encode("utf-8")


class EventStreamResponse:
    """An ASGI response streaming ``events`` as ``text/event-stream``."""

    def __init__(self, events: AsyncIterator[ServerSentEvent], *, heartbeat: float = HEARTBEAT_SECONDS,
                 headers: dict[str, str] | None = None, first: ServerSentEvent | None = None,
                 on_close: Callable[[], Awaitable[None]] | None = None):
        self.events = events
        self.first = first  # ready already: sent right behind the head, with no task in between
        # Run however the response ends, even if ``events`` was never started (whose
        # own ``finally`` then never runs).
        self.on_close = on_close
        self.heartbeat = heartbeat
        self.headers = {**SSE_HEADERS, **(headers or {})}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        raw_headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": raw_headers})
        try:
            if self.first is not None:
                await send({"type": "http.response.body", "body": self.first.encode(), "more_body": True})
            await self._stream(receive, send)
        except OSError:
            pass  # the client is gone
        finally:
            with contextlib.suppress(Exception):
                await self.events.aclose()  # type: ignore[attr-defined]
            if self.on_close is not None:
                await self.on_close()

    async def _stream(self, receive: Receive, send: Send) -> None:
        pump = asyncio.ensure_future(self._pump(send))
        watch = asyncio.ensure_future(self._watch_disconnect(receive))
        try:
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, watch):
                task.cancel()
            await asyncio.gather(pump, watch, return_exceptions=True)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pump(self, send: Send) -> None:
        iterator = self.events.__aiter__()
        pending: asyncio.Future[ServerSentEvent] | None = None
        try:
            while True:
                # The next event is awaited in its own task: a heartbeat must not cancel it.
                if pending is None:
                    pending = asyncio.ensure_future(iterator.__anext__())
                done, _ = await asyncio.wait({pending}, timeout=self.heartbeat)
                if not done:
                    chunk = b": keep-alive\n\n"
                else:
                    try:
                        event = pending.result()
                    except StopAsyncIteration:
                        pending = None
                        return
                    pending = None
                    chunk = event.encode()
                try:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                except OSError:
                    return
        finally:
            if pending is not None:
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)  # also reads a result nobody took

    @staticmethod
    async def _watch_disconnect(receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
