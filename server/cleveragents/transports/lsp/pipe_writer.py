"""The stdio server's output: frames written to stdout through an asyncio pipe
transport, with a bound on what waits for a client that stopped reading."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import BinaryIO

from cleveragents.transports.lsp.framing import pollable
from cleveragents.transports.output_limit import DEFAULT_MAX_OUTPUT_BUFFER, max_output_buffer_default

logger = logging.getLogger(__name__)


class PipeWriter:
    """Non-blocking writes to stdout through an asyncio transport (blocking fallback
    for regular files). pygls calls ``write`` with complete frames.

    What the client has not read yet waits in memory, up to ``max_buffered`` bytes.
    Past that the client has stopped reading: the writer drops the output, stops
    writing, keeps the reason in ``gave_up`` and calls ``on_overflow`` (the server then
    gives up on the client)."""

    def __init__(self, transport: asyncio.WriteTransport | None, stream: BinaryIO,
                 max_buffered: int = DEFAULT_MAX_OUTPUT_BUFFER):
        self._transport = transport
        self._stream = stream
        self.max_buffered = max_buffered
        self.on_overflow: Callable[[str], None] = lambda reason: None
        self.gave_up: str | None = None
        # The first frame of a pass of the event loop goes out at once (a lone answer
        # waits for nothing); those after it in the same pass go out together at its
        # end: many requests in flight answer in one pass, and a write is a system call.
        self._pending: list[bytes] = []
        self._in_pass = False

    @classmethod
    async def open(cls, stream: BinaryIO, max_buffered: int | None = None) -> PipeWriter:
        limit = max_buffered or max_output_buffer_default()
        if not pollable(stream):
            return cls(None, stream, limit)
        transport, _ = await asyncio.get_running_loop().connect_write_pipe(asyncio.Protocol, stream)
        return cls(transport, stream, limit)

    def write(self, data: bytes) -> None:
        if self._transport is None:
            self._stream.write(data)
            self._stream.flush()
            return
        if self._transport.is_closing():
            return  # given up on, or shutting down: nothing more is kept
        if self._in_pass:
            self._pending.append(data)
            return
        self._in_pass = True
        asyncio.get_running_loop().call_soon(self.flush)
        self._send(data, 1)

    def flush(self) -> None:
        """Write what this pass of the event loop produced after its first frame."""
        self._in_pass = False
        if not self._pending or self._transport is None:
            return
        frames = len(self._pending)
        data = b"".join(self._pending)
        self._pending.clear()
        self._send(data, frames)

    def _send(self, data: bytes, frames: int) -> None:
        assert self._transport is not None
        if self._transport.is_closing():
            return
        waiting = self._transport.get_write_buffer_size()
        self._transport.write(data)
        # Past the limit with output already waiting, or behind frames of its own: the
        # client is behind. (One frame bigger than the limit, to a client that keeps
        # up, is not a stall.)
        if (waiting or frames > 1) and self._transport.get_write_buffer_size() > self.max_buffered:
            self._overflow()

    def _overflow(self) -> None:
        assert self._transport is not None
        reason = f"the client stopped reading: more than {self.max_buffered} bytes of output waited for it"
        logger.error("%s; giving up on the client", reason)
        self._transport.abort()  # frees the buffer; nothing more is written
        self.gave_up = reason
        self.on_overflow(reason)

    @property
    def buffered(self) -> int:
        if self._transport is None:
            return 0
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait (bounded) until everything written has reached the pipe."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.buffered and loop.time() < deadline:
            await asyncio.sleep(0.005)

    def close(self) -> None:
        if self._transport is not None:
            self.flush()
            self._transport.close()


def claim_stdout() -> BinaryIO:
    """Give the protocol a private copy of stdout and point fd 1 at stderr, so a stray
    ``print`` (ours, a library's or a C extension's) can never corrupt the framing. What
    Python writes to ``sys.stdout`` or ``sys.stderr`` (a ``print``, a warning, a thread's
    traceback) goes through the log's queue (``serving.queued_stderr``): a client that
    never reads stderr can't block the thread that writes."""
    from cleveragents.transports.serving import queued_stderr

    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr = queued_stderr()
    return os.fdopen(protocol_fd, "wb", buffering=0)
