"""Server-sent events, read line by line (the WHATWG "event stream" format).

The parser is pure: it is fed lines without their line ending and hands back each
complete event, so the HTTP client can drive it from any byte source and tests can
drive it from a list.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

# A stream with a runaway event (no blank line, ever) must not grow memory without
# bound.
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


async def parse_sse(lines: AsyncIterable[str], parser: SseParser | None = None) -> AsyncIterator[SseEvent]:
    """The events of a stream of lines."""
    parser = parser or SseParser()
    async for line in lines:
        # A chunk may hold several lines when the peer ends lines with a bare CR.
        for piece in line.splitlines() or [""]:
            if (event := parser.feed(piece)) is not None:
                yield event
    parser.close()
