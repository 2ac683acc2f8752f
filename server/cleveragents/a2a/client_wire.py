"""Reading what an A2A peer sends back over HTTP: JSON-RPC responses (plain or as SSE
events), the stream object the client hands out, and the translation of httpx's
exceptions into the client's own. Used by ``client_http.A2AClient``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, TypeVar

from cleveragents.a2a.client_dialect import STANDARD_METHODS
from cleveragents.a2a.client_errors import (
    A2AClientConnectionError,
    A2AClientError,
    A2AClientTimeoutError,
    http_error,
    remote_error,
    with_auth_kind,
)
from cleveragents.a2a.errors import InvalidAgentResponseError
from cleveragents.domain import json_cost
from cleveragents.domain.bounded_read import read_up_to
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.event_stream import LineSplitter, SseParser, SseTooLargeError
from cleveragents.domain.json_limits import MAX_DEPTH, first_too_deep

T = TypeVar("T")
SKIP: Any = object()  # an SSE event that carries no item
# A peer must not make the client hold an unbounded answer in memory.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class A2AStream(Generic[T]):
    """The items of one SSE response, as an async iterator. ``last_event_id`` is the
    SSE id of the last event read, to resume from. Use ``async with`` (or ``aclose``)
    to end it early: that closes the connection."""

    def __init__(self, items: Callable[[SseParser], AsyncIterator[T]]):
        self._parser = SseParser()
        self._items = items(self._parser)

    @property
    def last_event_id(self) -> str | None:
        return self._parser.last_event_id

    def __aiter__(self) -> A2AStream[T]:
        return self

    async def __anext__(self) -> T:
        return await self._items.__anext__()

    async def aclose(self) -> None:
        if getattr(self._items, "ag_running", False):
            return  # a consumer is inside it (e.g. being cancelled); it closes the connection as it leaves
        await self._items.aclose()  # type: ignore[attr-defined]

    async def __aenter__(self) -> A2AStream[T]:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


async def read_bounded(response: Any, method: str, url: str, limit: int = MAX_RESPONSE_BYTES) -> str:
    """The body of a streamed httpx response, refused past ``limit`` bytes."""
    body, more = await read_up_to(response.aiter_bytes(), limit)
    if more:
        raise InvalidAgentResponseError(f"{method} at {url} answered with more than {limit} bytes",
                                        {"url": url, "method": method, "limit": limit})
    return body.decode(response.encoding or "utf-8", errors="replace")


def answer(method: str, url: str, status: int, body: str) -> Any:
    """The ``result`` of a JSON-RPC response body; its ``error`` (or an HTTP error
    status) raised as the matching exception."""
    return _answer_of(method, url, status, parsed(body, method, url), body)


def parsed(text: str, method: str, url: str) -> Any:
    """The JSON value of a peer's ``text``, or None when it is not JSON; refused
    unparsed when its values would take more than ``MAX_PARSE_COST`` of memory."""
    if not json_cost.within_budget(text):
        raise InvalidAgentResponseError(
            f"{method} at {url} answered with too many values: they would take more than "
            f"{json_cost.MAX_PARSE_COST} bytes of memory (counted before parsing)",
            {"url": url, "method": method, "limit": json_cost.MAX_PARSE_COST})
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past what the parser takes
        return None


def _answer_of(method: str, url: str, status: int, message: Any, body: str) -> Any:
    """``answer`` of a body already parsed (``message``; None if it is not JSON)."""
    if isinstance(message, dict) and message.get("error") is not None:
        exc = remote_error(message["error"], url=url, method=method, standard=method in STANDARD_METHODS,
                           status=status)
        raise with_auth_kind(exc, status)
    if status >= 400:
        raise http_error(status, url=url, method=method, body=body)
    if isinstance(message, dict) and message.get("jsonrpc") == "2.0" and "id" in message and "result" not in message:
        return None  # some peers drop a null result (a void method's answer)
    if not isinstance(message, dict) or "result" not in message:
        raise InvalidAgentResponseError(f"{method} at {url} answered with something that is not a "
                                        f"JSON-RPC response: {' '.join(body.split())[:200]}",
                                        {"url": url, "method": method})
    return message["result"]


def last_of_stream(method: str, url: str, text: str) -> Any:
    """A plain call that got an SSE answer: its last item."""
    parser, splitter, last = SseParser(), LineSplitter(), None
    try:
        for line in [*splitter.feed_text(text), *splitter.close(), ""]:
            if (event := parser.feed(line)) is not None and (item := stream_item(method, url, event.data)) is not SKIP:
                last = item
    except SseTooLargeError as exc:
        raise InvalidAgentResponseError(f"{method} at {url}: {exc}", {"url": url}) from None
    return last


def stream_item(method: str, url: str, data: str) -> Any:
    """One SSE ``data:``: a response's result, a notification's params, or SKIP."""
    message = parsed(data, method, url)
    if isinstance(message, dict) and "method" in message and "id" not in message:
        return message.get("params")  # a notification, as `_cleveragents/event/subscribe` sends
    if isinstance(message, dict) and not {"result", "error", "jsonrpc"} & message.keys():
        return SKIP  # e.g. a keep-alive object
    return _answer_of(method, url, 200, message, data)  # parsed once: the parse costs per value


def decode(method: str, decoder: Callable[[Any], T], value: Any) -> T:
    """A result through a codec; a malformed one is the peer's fault, and says so. What
    a peer answers may be stored and served again, so it is held to the limits a
    request's params are."""
    if (loc := first_too_deep(value, MAX_DEPTH)) is not None:
        raise InvalidAgentResponseError(
            f"{method} answered with JSON nested deeper than {MAX_DEPTH} levels",
            {"method": method, "errors": [{"loc": loc, "msg": f"nested deeper than {MAX_DEPTH} levels",
                                           "type": "too_deep", "limit": MAX_DEPTH}]})
    try:
        return decoder(value)
    except ValidationError as exc:
        errors = exc.data.get("errors")
        first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else None
        what = f"{'.'.join(map(str, first.get('loc', ())))}: {first.get('msg')}" if first else exc.message
        raise InvalidAgentResponseError(f"{method} answered with an invalid result: {what}",
                                        {"method": method, **exc.data}) from None


class TransportErrors:
    """Turns httpx's exceptions into ``A2AClientError``s that name the URL. With
    ``deadline``, ``timeout`` bounds the whole block too: httpx's timeout is per read,
    and a peer sending a byte within each would hold a call as long as it liked."""

    def __init__(self, method: str, url: str, timeout: float | None, *, deadline: bool = False,
                 ends_at: float | None = None):
        """``ends_at``: the loop's time the deadline ends at, when it began before this
        block (one deadline for several tries)."""
        self.method, self.url, self.timeout = method, url, timeout
        self._whole, self._ends_at = deadline, ends_at
        self._deadline: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        if self._whole:  # the clock starts here, not when the guard is made
            self._deadline = (asyncio.timeout(self.timeout) if self._ends_at is None
                              else asyncio.timeout_at(self._ends_at))
            await self._deadline.__aenter__()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        expired = False
        if self._deadline is not None:
            try:
                await self._deadline.__aexit__(exc_type, exc, tb)
            except TimeoutError:
                expired = True
        if not expired and (exc is None or isinstance(exc, A2AClientError)
                            or not type(exc).__module__.startswith("httpx")):
            return False
        import httpx

        where = f"{self.method} at {self.url}"
        data = {"url": self.url, "method": self.method}
        if expired or isinstance(exc, httpx.TimeoutException):
            limit = f"within {self.timeout:g}s" if self.timeout is not None else "in time"
            kind = "the whole answer took longer" if expired else type(exc).__name__
            raise A2AClientTimeoutError(f"{where}: no answer {limit} ({kind})",
                                        data, url=self.url, method=self.method) from None
        if isinstance(exc, httpx.ConnectError | httpx.ProxyError):
            raise A2AClientConnectionError(f"{where}: cannot connect: {exc or type(exc).__name__}", data,
                                           url=self.url, method=self.method) from None
        if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
            raise A2AClientConnectionError(f"{where}: the connection broke: {exc or type(exc).__name__}", data,
                                           url=self.url, method=self.method) from None
        raise A2AClientError(f"{where}: {type(exc).__name__}: {exc}", data, url=self.url, method=self.method) from None
