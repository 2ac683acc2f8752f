"""LSP base-protocol framing on stdio: ``Content-Length: N`` headers, then N bytes.

The reader is asyncio-native (no thread hop per message) and falls back to a thread
when stdin is a regular file. Every frame it can't read is answered (``FrameError``,
id null), and it never stalls without a word. The recovery rule:

- A header block is lines ``Name: value`` (the name an RFC 7230 token, the value
  printable ASCII), at most 32 of them, ended by an empty line; it holds one
  ``Content-Length`` of 1-18 ASCII digits. The same length given twice is one length;
  two different ones are refused (which one counts is what a smuggled frame exploits).
- A block that breaks a rule is answered -32700 at once, and one over
  ``--max-message-size`` -32600. Its ``Content-Length`` is not trusted: the reader
  skips the rest of the block and then the input up to the next ``Content-Length:``
  (any case), and reads on from there. When the input pauses for
  ``BODY_STALL_SECONDS`` after bytes it skipped, those bytes are answered -32700 too:
  they may have been a message of their own (a header block with no length, say)
  whose client waits.
- Bytes before a header on the same line (the tail of a body whose length was too
  small, a message sent without a header) are answered -32700; the frame after them
  is read.
- A valid JSON body can't hold a line ending in ``Content-Length: N`` (JSON has no raw
  line break inside a string and no bare word outside one), so a body that does had a
  length too large: it is answered -32700 and the frame whose header it swallowed is
  read. A body that stops short for ``BODY_STALL_SECONDS`` although what came is
  already a whole JSON value is answered the same way (the client waits for an answer
  that would never come); otherwise one line on stderr says what the reader waits for.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal, Protocol

from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE

logger = logging.getLogger(__name__)

BODY_STALL_SECONDS = 1.0
_MAX_HEADER_LINES = 32
_READ_LIMIT = 1 << 20
_MAX_LENGTH_DIGITS = 18  # more would exceed any real message
_HEADER_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([\x20-\x7e\t]*?)[ \t]*\r?\n")
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_LENGTH_NAME = b"content-length:"
_HEADER, _BODY = "header", "body"  # what the reader skips after a refused frame
_EMBEDDED_HEADER = re.compile(rb"content-length:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FrameError:
    """A frame that could not be read; ``code`` and ``message`` go back to the client."""

    code: int
    message: str
    data: dict[str, object]


class ThreadedReader:
    """readline/read on a blocking file, each call in a worker thread."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream

    async def readline(self) -> bytes:
        """A line, or the first ``_READ_LIMIT`` bytes of a longer one."""
        return await asyncio.to_thread(self._stream.readline, _READ_LIMIT)

    async def read(self, n: int) -> bytes:
        return await asyncio.to_thread(self._stream.read, n)


def pollable(stream: BinaryIO) -> bool:
    """Whether the event loop can watch this file: pipes and sockets only (epoll
    refuses regular files and devices such as /dev/null)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def open_stdin(stream: BinaryIO | None = None) -> asyncio.StreamReader | ThreadedReader:
    stream = stream or sys.stdin.buffer
    if not pollable(stream):
        return ThreadedReader(stream)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_LIMIT, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stream)
    return reader


class FrameReader:
    """The frames of one input, by the recovery rule above."""

    def __init__(self, reader: asyncio.StreamReader | ThreadedReader,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, pending: bytes = b""):
        self._reader = reader
        self.max_message_size = max_message_size
        self._threaded = isinstance(reader, ThreadedReader)
        # What a StreamReader holds already (read without waiting): no public way to ask.
        self._buffer: bytearray | None = None if self._threaded else reader._buffer  # type: ignore[union-attr]
        # Input read ahead of the frame being read (or before this reader, to tell the
        # framing apart: ``sniff.py``): it comes first.
        self._pending = pending
        # After a refused frame the reader skips its rest: the rest of its header block
        # (HEADER, when the block was refused before its end) and then its body (BODY).
        self._skipping: str | None = None

    async def next(self) -> bytes | FrameError | None:
        """The next frame's body, a FrameError for a frame that can't be read, or
        ``None`` at end of input."""
        if self._skipping is not None and (skipped := await self._skip()) is not True:
            return skipped  # end of input, or skipped input that was answered
        length_texts: list[bytes] = []
        problem: str | None = None
        taken = lines = 0
        while True:
            if self._pending or self._buffer is None:
                line = await self._line()
            else:  # _line(), inlined: two lines of every frame come this way
                try:
                    line = await self._reader.readuntil(b"\n")  # type: ignore[union-attr]
                except asyncio.IncompleteReadError as exc:
                    line = exc.partial
                except asyncio.LimitOverrunError as exc:
                    line = await self._reader.read(exc.consumed)
            if not line:
                if lines:
                    logger.warning("end of input inside a message header")
                return None
            if line in (b"\r\n", b"\n"):
                if lines:
                    break
                continue  # blank lines between messages
            lines += 1
            if line.startswith(b"Content-Length: ") and line.endswith(b"\r\n") and line[16:-2].isdigit():
                length_texts.append(line[16:-2])  # the header as every client writes it
            elif (header := _HEADER_LINE.fullmatch(line)) is None:
                if (start := line.lower().rfind(_LENGTH_NAME)) > 0:  # a header after junk: read from it
                    self._pending = line[start:] + self._pending
                    return _error("bytes that are not part of a frame", size=taken + start)
                problem = problem or _describe(line)
            elif header[1].lower() == b"content-length":
                length_texts.append(header[2])
            taken += len(line)
            if lines > _MAX_HEADER_LINES:
                self._skipping = _HEADER  # the rest of this block is not read
                return _error(problem or f"more than {_MAX_HEADER_LINES} header lines")
        if problem is None and len(length_texts) == 1 and len(text := length_texts[0]) <= _MAX_LENGTH_DIGITS \
                and text.isdigit():
            length = int(text)
        else:
            length, problem, data = _length(length_texts, problem)
            if problem is not None:
                self._skipping = _BODY
                return _error(problem, **data)
        if length > self.max_message_size:
            self._skipping = _BODY  # the length is not trusted to skip the body: see the module docstring
            return FrameError(-32600, "Invalid request: message too large",
                              {"size": length, "max_message_size": self.max_message_size})
        if not self._pending and self._buffer is not None and len(self._buffer) >= length:
            body = await self._reader.read(length)  # it is there: no wait
            if b"\n" not in body:
                return body
            return self._checked(body, length)
        return await self._body(length)

    async def _body(self, length: int) -> bytes | FrameError | None:
        data = b""
        if self._pending:
            data, self._pending = self._pending[:length], self._pending[length:]
        if len(data) < length and (self._buffer is None or self._buffer):
            data += await self._reader.read(length - len(data))  # what is there: no wait
        if len(data) < length:
            return await self._body_arriving(bytearray(data), length)
        return self._checked(data, length)

    def _checked(self, body: bytes, length: int) -> bytes | FrameError:
        """``body``, unless it holds the next frame's header (see the module docstring)."""
        if b"\n" in body and (header := _EMBEDDED_HEADER.search(body)) is not None:
            return self._swallowed(body, header.start(), length)
        return body

    async def _body_arriving(self, data: bytearray, length: int) -> bytes | FrameError | None:
        """The rest of a body that is not there yet: watched for the next frame's header
        inside it and for a stall (see the module docstring)."""
        warned = False
        while len(data) < length:
            if self._threaded:  # a regular file never stalls (and a thread's read can't be taken back)
                chunk = await self._reader.read(length - len(data))
            elif not data:  # nothing of it yet: nothing to judge, only to report if it never comes
                warning = asyncio.get_running_loop().call_later(BODY_STALL_SECONDS, _waiting, 0, length)
                try:
                    chunk = await self._reader.read(length)
                finally:
                    warning.cancel()
            else:
                try:
                    async with asyncio.timeout(BODY_STALL_SECONDS):
                        chunk = await self._reader.read(length - len(data))
                except TimeoutError:
                    if _whole_json(data):
                        self._skipping = _BODY
                        return _error("Content-Length is larger than the body", content_length=length,
                                      received=len(data))
                    if not warned:
                        warned = True
                        _waiting(len(data), length)
                    continue
            if not chunk:
                logger.warning("end of input inside a message body (%d of %d bytes)", len(data), length)
                return None
            searched = max(0, len(data) - 64)
            data += chunk
            if b"\n" in chunk and (header := _EMBEDDED_HEADER.search(data, searched)) is not None:
                return self._swallowed(bytes(data), header.start(), length)
        return bytes(data)

    def _swallowed(self, data: bytes, start: int, length: int) -> FrameError:
        """The body holds the next frame's header at ``start``: read on from there."""
        self._pending = data[start:] + self._pending
        return _error("Content-Length is larger than the body", content_length=length, received=start)

    async def _skip(self) -> Literal[True] | FrameError | None:
        """Skip the rest of a refused frame, up to the next ``Content-Length:`` (then
        ``True``; ``None`` at end of input). When the input pauses after bytes of its
        body, those bytes get an answer (a FrameError): they may have been a message
        of their own whose client waits."""
        skipped, tail = 0, b""
        while True:
            if skipped and self._buffer is not None and not self._buffer and not self._pending:
                try:
                    async with asyncio.timeout(BODY_STALL_SECONDS):
                        line = await self._line()
                except TimeoutError:
                    return _error("bytes that are not part of a frame", size=skipped)
            else:
                line = await self._line()
            if not line:
                return None
            text = tail + line
            if (start := text.lower().rfind(_LENGTH_NAME)) >= 0:
                self._pending = text[start:] + self._pending
                self._skipping = None
                if skipped + start - len(tail):
                    logger.info("skipped %d bytes to the next frame header", skipped + start - len(tail))
                return True
            # A long line comes in pieces: keep what could be the start of the name.
            tail = b"" if line.endswith(b"\n") else text[-(len(_LENGTH_NAME) - 1):]
            if self._skipping == _HEADER:
                if line in (b"\r\n", b"\n"):
                    self._skipping = _BODY  # the refused block ends here
            elif line.strip():
                skipped += len(line)

    async def _line(self) -> bytes:
        """A line with its ``\\n``, a piece of a longer one, what is left at end of
        input, or ``b""`` at the end."""
        if self._pending:
            end = self._pending.find(b"\n") + 1
            if end or len(self._pending) >= _READ_LIMIT:
                end = end or len(self._pending)
                line, self._pending = self._pending[:end], self._pending[end:]
                return line
            head, self._pending = self._pending, b""
            return head + await self._line()
        if self._threaded:
            return await self._reader.readline()
        reader: asyncio.StreamReader = self._reader  # type: ignore[assignment]
        try:
            return await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except asyncio.LimitOverrunError as exc:  # a line longer than the buffer: a piece of it
            return await reader.read(exc.consumed)


def _error(reason: str, **data: object) -> FrameError:
    return FrameError(-32700, f"Parse error: {reason}", {"reason": reason, **data})


def _describe(line: bytes) -> str:
    """What is wrong with a header line that is not ``Name: value``."""
    name, colon, value = line.partition(b":")
    if colon and _TOKEN.fullmatch(name):
        shown = value.strip(b" \t\r\n").decode("latin-1")
        if name.lower() == b"content-length":
            return f"invalid Content-Length {shown[:40]!r}"
        return f"the value of the header {name.decode()[:40]!r} is not printable ASCII"
    if not line.endswith(b"\n") and len(line) >= _READ_LIMIT:
        return "header line too long"
    return f"malformed header line {line[:80]!r}"


def _length(texts: list[bytes], problem: str | None) -> tuple[int, str | None, dict[str, object]]:
    """The block's Content-Length, or what is wrong with it (and its data): the path of
    anything but one plain length."""
    if problem is not None:
        return 0, problem, {}
    if not texts:
        return 0, "missing Content-Length header", {}
    lengths = [_content_length(text.decode("ascii")) for text in texts]
    for text, length in zip(texts, lengths, strict=True):
        if length is None:
            return 0, f"invalid Content-Length {text.decode('ascii')[:40]!r}", {}
    if len(set(lengths)) > 1:
        return 0, "conflicting Content-Length headers", {"values": [text.decode("ascii") for text in texts]}
    return lengths[0], None, {}  # type: ignore[return-value]


def _waiting(received: int, length: int) -> None:
    logger.warning("stdin: waiting for the rest of a frame: %d of %d bytes of its body came, then nothing for "
                   "%.1f s (is its Content-Length larger than the body?)", received, length, BODY_STALL_SECONDS)


def _whole_json(data: bytearray) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


class Frames(Protocol):
    """Where frames come from: a ``FrameReader``, or one with frames read ahead."""

    async def next(self) -> bytes | FrameError | None: ...


async def read_frames(
    frames: Frames,
    on_message: Callable[[bytes], None],
    on_error: Callable[[FrameError], None],
    should_stop: Callable[[], bool] = lambda: False,
) -> None:
    """Read frames until end of input (or ``should_stop``), handing each on."""
    while not should_stop():
        frame = await frames.next()
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


def _content_length(text: str) -> int | None:
    """The header's value as a byte count; ``None`` unless it is plain ASCII digits
    (``str.isdigit`` also accepts ``²``) of a size a pipe can carry."""
    if not text.isascii() or not text.isdigit() or len(text) > _MAX_LENGTH_DIGITS:
        return None
    return int(text)
