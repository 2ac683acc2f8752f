"""Server-sent events (the WHATWG "event stream" format), read from the bytes of an
HTTP response: the A2A client's streams and the OpenAI-compatible actor's replies.

The bytes are decoded as UTF-8 and split into lines at CRLF, LF or CR, and nothing
else: U+2028 and the other separators ``str.splitlines`` knows may stand unescaped in
a JSON string. What a peer sends is held to ``MAX_EVENT_CHARS``, a line as much as an
event: a line that never ends must not grow memory without bound before it is parsed.
The parser is pure: it is fed lines without their line ending and hands back each
complete event, so tests can drive it from a list.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

MAX_EVENT_CHARS = 16 * 1024 * 1024
_LINE_END = re.compile("\r\n|\r|\n")


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


async def sse_lines(chunks: AsyncIterable[bytes], max_chars: int = MAX_EVENT_CHARS) -> AsyncIterator[str]:
    """The lines of a stream of bytes, without their endings; SseTooLargeError once a
    line passes ``max_chars``. A last line with no ending is a line too."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")  # a leading BOM is not text
    pending: list[str] = []  # the line read so far, in pieces: a long line is not copied per chunk
    size = 0
    after_cr = False  # the last chunk ended with CR: an LF that starts the next one ends no line
    async for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            if after_cr and text[0] == "\n":
                text = text[1:]
            after_cr = text.endswith("\r")
        start = 0
        for end in _LINE_END.finditer(text):
            pending.append(text[start:end.start()])
            yield "".join(pending)
            pending, size, start = [], 0, end.end()
        if start < len(text):
            pending.append(text[start:])
            size += len(text) - start
            if size > max_chars:
                raise SseTooLargeError(f"an SSE line exceeds {max_chars} characters")
    if tail := decoder.decode(b"", final=True):
        pending.append(tail)
    if pending:
        yield "".join(pending)


async def parse_sse(chunks: AsyncIterable[bytes], parser: SseParser | None = None) -> AsyncIterator[SseEvent]:
    """The events of a stream of bytes."""
    parser = parser or SseParser()
    async for line in sse_lines(chunks, parser.max_chars):
        if (event := parser.feed(line)) is not None:
            yield event
    parser.close()
