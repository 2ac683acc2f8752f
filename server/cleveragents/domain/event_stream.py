"""Server-sent events (the WHATWG "event stream" format), read from the bytes of an
HTTP response: the A2A client's streams and the OpenAI-compatible actor's replies.

The bytes are decoded as UTF-8 and split into lines at CRLF, LF or CR, and nothing
else: U+2028 and the other separators ``str.splitlines`` knows may stand unescaped in
a JSON string. What a peer sends is held to ``MAX_EVENT_CHARS``, a line as much as an
event: a line that never ends must not grow memory without bound before it is parsed.
The parser is pure: it is fed lines without their line ending and hands back each
complete event, so tests can drive it from a list.

httpx-sse was weighed (0.4.3): it has no such bound. A peer's 200 MiB line with no end
reached the caller whole, and the reading process peaked at 625 MiB.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

MAX_EVENT_CHARS = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None  # the last event id seen on the stream, as the spec keeps it
    retry: int | None = None


class SseTooLargeError(ValueError):
    pass


class SseParser:
    def __init__(self, max_chars: int = MAX_EVENT_CHARS):
        self.max_chars = max_chars
        self.last_event_id: str | None = None
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._retry: int | None = None

    def feed(self, line: str) -> SseEvent | None:
        """One line; the event it completes, if any."""
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):  # a comment, e.g. a keep-alive ping
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._size += len(value) + 1
            if self._size > self.max_chars:
                raise SseTooLargeError(f"an SSE event exceeds {self.max_chars} characters")
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None  # unknown fields are ignored

    def close(self) -> None:
        """End of stream: an event with no closing blank line is dropped, as the spec says."""
        self._reset()

    def _dispatch(self) -> SseEvent | None:
        if not self._data:
            self._reset()
            return None
        event = SseEvent(data="\n".join(self._data), event=self._event or "message",
                         id=self.last_event_id, retry=self._retry)
        self._reset()
        return event

    def _reset(self) -> None:
        self._data, self._size, self._event, self._retry = [], 0, "", None


class LineSplitter:
    """Bytes in, whole lines out (without their endings); SseTooLargeError once the
    line still being read passes ``max_chars``."""

    def __init__(self, max_chars: int = MAX_EVENT_CHARS):
        self.max_chars = max_chars
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")  # a leading BOM is not text
        self._pending: list[str] = []  # the line not ended yet, in pieces: a long one is not copied per chunk
        self._size = 0
        self._after_cr = False  # the last text ended with CR: an LF that starts the next ends no line

    def feed(self, chunk: bytes) -> list[str]:
        return self.feed_text(self._decoder.decode(chunk))

    def feed_text(self, text: str) -> list[str]:
        """Text already decoded (the whole of a body read as one)."""
        if not text:
            return []
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        self._after_cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        unended = lines.pop()
        if lines and self._pending:
            lines[0] = "".join((*self._pending, lines[0]))
            self._pending, self._size = [], 0
        if unended:
            self._pending.append(unended)
            self._size += len(unended)
            if self._size > self.max_chars:
                raise SseTooLargeError(f"an SSE line exceeds {self.max_chars} characters")
        return lines

    def close(self) -> list[str]:
        """End of input: a last line with no ending is a line too."""
        if tail := self._decoder.decode(b"", final=True):
            self._pending.append(tail)
        lines = ["".join(self._pending)] if self._pending else []
        self._pending, self._size = [], 0
        return lines


async def _line_batches(chunks: AsyncIterable[bytes], max_chars: int) -> AsyncIterator[list[str]]:
    """The lines of each chunk, then those left at the end: a step per chunk, not per line."""
    splitter = LineSplitter(max_chars)
    async for chunk in chunks:
        yield splitter.feed(chunk)
    yield splitter.close()


async def sse_lines(chunks: AsyncIterable[bytes], max_chars: int = MAX_EVENT_CHARS) -> AsyncIterator[str]:
    """The lines of a stream of bytes (``LineSplitter``)."""
    async for lines in _line_batches(chunks, max_chars):
        for line in lines:
            yield line


async def parse_sse(chunks: AsyncIterable[bytes], parser: SseParser | None = None) -> AsyncIterator[SseEvent]:
    """The events of a stream of bytes."""
    parser = parser or SseParser()
    async for lines in _line_batches(chunks, parser.max_chars):
        for line in lines:
            if (event := parser.feed(line)) is not None:
                yield event
    parser.close()
