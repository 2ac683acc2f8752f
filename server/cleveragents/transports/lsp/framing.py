"""LSP base-protocol framing on stdio: ``Content-Length: N`` headers, then N bytes.

The reader is asyncio-native (no thread hop per message) and falls back to a thread
when stdin is a regular file. It reports malformed frames instead of dropping them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from cleveragents.transports.output_limit import DEFAULT_MAX_OUTPUT_BUFFER, max_output_buffer_default

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024
_MAX_HEADER_LINES = 32
_DISCARD_CHUNK = 1 << 16
_READ_LIMIT = 1 << 20
_MAX_LENGTH_DIGITS = 18  # more would exceed any real message


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame that could not be read; ``code`` and ``message`` go back to the client."""

    code: int
    message: str
    data: dict[str, object]


class ThreadedReader:
    """readline/readexactly on a blocking file, each call in a worker thread."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream

    async def readline(self) -> bytes:
        return await asyncio.to_thread(self._stream.readline)

    async def readexactly(self, n: int) -> bytes:
        data = await asyncio.to_thread(self._stream.read, n)
        if len(data) < n:
            raise asyncio.IncompleteReadError(data, n)
        return data


def _pollable(stream: BinaryIO) -> bool:
    """Whether the event loop can watch this file: pipes and sockets only (epoll
    refuses regular files and devices such as /dev/null)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def open_stdin(stream: BinaryIO | None = None) -> asyncio.StreamReader | ThreadedReader:
    stream = stream or sys.stdin.buffer
    if not _pollable(stream):
        return ThreadedReader(stream)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_LIMIT, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stream)
    return reader


class PipeWriter:
    """Non-blocking writes to stdout through an asyncio transport (blocking fallback
    for regular files). pygls calls ``write`` with complete frames.

    What the client has not read yet waits in memory, up to ``max_buffered`` bytes.
    Past that the client has stopped reading: the writer drops the output, stops
    writing and calls ``on_overflow`` (the server then gives up on the client)."""

    def __init__(self, transport: asyncio.WriteTransport | None, stream: BinaryIO,
                 max_buffered: int = DEFAULT_MAX_OUTPUT_BUFFER):
        self._transport = transport
        self._stream = stream
        self.max_buffered = max_buffered
        self.on_overflow: Callable[[str], None] = lambda reason: None
        # Frames written during one pass of the event loop go out in one write: many
        # requests in flight answer in the same pass, and a write is a system call.
        self._pending: list[bytes] = []

    @classmethod
    async def open(cls, stream: BinaryIO, max_buffered: int | None = None) -> PipeWriter:
        limit = max_buffered or max_output_buffer_default()
        if not _pollable(stream):
            return cls(None, stream, limit)
        transport, _ = await asyncio.get_running_loop().connect_write_pipe(asyncio.Protocol, stream)
        return cls(transport, stream, limit)  # type: ignore[arg-type]

    def write(self, data: bytes) -> None:
        if self._transport is None:
            self._stream.write(data)
            self._stream.flush()
            return
        if self._transport.is_closing():
            return  # given up on, or shutting down: nothing more is kept
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self._pending.append(data)

    def flush(self) -> None:
        """Write what this pass of the event loop produced."""
        if not self._pending or self._transport is None:
            return
        frames = len(self._pending)
        data = b"".join(self._pending)
        self._pending.clear()
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


async def read_frame(
    reader: asyncio.StreamReader | ThreadedReader, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> bytes | FrameError | None:
    """The next frame's body, a FrameError for a frame that can't be read, or
    ``None`` at end of input."""
    headers: dict[str, str] = {}
    bad_header: str | None = None
    lines = 0
    while True:
        try:
            line = await reader.readline()
        except ValueError:  # a header line longer than the reader's limit
            bad_header = "header line too long"
            continue
        if not line:
            if headers:
                logger.warning("end of input inside a message header")
            return None
        if line in (b"\r\n", b"\n"):
            if headers or bad_header:
                break
            continue  # blank lines between messages
        lines += 1
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or lines > _MAX_HEADER_LINES:
            bad_header = f"malformed header line {line[:80]!r}"
            continue
        headers[name.strip().lower()] = value.strip()

    length_text = headers.get("content-length")
    length = _content_length(length_text)
    if length is not None and (bad_header or length > max_message_size):
        # Skip the body the header announces, so the next frame is read from its start.
        if not await _discard(reader, length):
            return None
    if bad_header or length is None:
        reason = bad_header or ("missing Content-Length header" if length_text is None
                                else f"invalid Content-Length {length_text[:40]!r}")
        return FrameError(-32700, f"Parse error: {reason}", {"reason": reason})
    if length > max_message_size:
        return FrameError(-32600, "Invalid request: message too large",
                          {"size": length, "max_message_size": max_message_size})
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        logger.warning("end of input inside a message body (%d of %d bytes)", len(exc.partial), length)
        return None


async def read_frames(
    reader: asyncio.StreamReader | ThreadedReader,
    on_message: Callable[[bytes], None],
    on_error: Callable[[FrameError], None],
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    should_stop: Callable[[], bool] = lambda: False,
) -> None:
    """Read frames until end of input (or ``should_stop``), handing each on."""
    while not should_stop():
        frame = await read_frame(reader, max_message_size)
        if frame is None:
            return
        if isinstance(frame, FrameError):
            on_error(frame)
        else:
            on_message(frame)


def encode_frame(payload: dict[str, Any]) -> bytes:
    """A frame as pygls writes them (ASCII JSON)."""
    return frame_body(json.dumps(payload).encode("ascii"))


def frame_body(body: bytes) -> bytes:
    """A frame around a UTF-8 JSON body, with the headers pygls writes."""
    return b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s" % (len(body), body)


def _content_length(text: str | None) -> int | None:
    """The header's value as a byte count; ``None`` unless it is plain ASCII digits
    (``str.isdigit`` also accepts ``²``) of a size a pipe can carry."""
    if text is None or not text.isascii() or not text.isdigit() or len(text) > _MAX_LENGTH_DIGITS:
        return None
    return int(text)


async def _discard(reader: asyncio.StreamReader | ThreadedReader, length: int) -> bool:
    """Skip ``length`` bytes without holding them; ``False`` at end of input."""
    remaining = length
    while remaining:
        chunk = min(remaining, _DISCARD_CHUNK)
        try:
            await reader.readexactly(chunk)
        except asyncio.IncompleteReadError:
            return False
        remaining -= chunk
    return True


def claim_stdout() -> BinaryIO:
    """Give the protocol a private copy of stdout and point fd 1 at stderr, so a stray
    ``print`` (ours, a library's or a C extension's) can never corrupt the framing."""
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb", buffering=0)
