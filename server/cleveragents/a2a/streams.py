"""The stream contract: what a streaming method yields, and a call as a transport runs it.

A streaming method's handler (``MethodSpec.streaming``) returns an async iterator of
``StreamItem``s, each already encoded in the call's dialect. A handler may also answer
with ``Followed``: its result, then a live stream that goes on after the response (an
event subscription). ``A2ALocalFacade.open`` turns either into a ``Call``; each
transport frames the items its own way (stdio: notifications; HTTP: SSE events).

The notification names of the stdio binding are spelled here, and only here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # light to import: the stdio server reads the names before the models load
    from cleveragents.a2a.models import A2AResponse

STATUS, ARTIFACT, EVENT = "status", "artifact", "event"
STATUS_NOTIFICATION = "task/statusUpdate"
ARTIFACT_NOTIFICATION = "task/artifactUpdate"
EVENT_NOTIFICATION = "_cleveragents/event"
NOTIFICATIONS = {STATUS: STATUS_NOTIFICATION, ARTIFACT: ARTIFACT_NOTIFICATION, EVENT: EVENT_NOTIFICATION}

ErrorMapper = Callable[[Exception], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One item of a stream. ``payload`` is wire-ready (the call's dialect);
    ``event_id`` is where a client resumes from (SSE ``id``, ``Last-Event-ID``)."""

    kind: str  # STATUS | ARTIFACT | EVENT
    payload: dict[str, Any]
    event_id: str | None = None
    event_type: str | None = None  # an event's type: SSE names the event with it
    update: StreamItem | None = None  # an event that is also a task or plan update: that update

    @property
    def notification(self) -> str:
        return NOTIFICATIONS[self.kind]


def call_notification(item: StreamItem, request_id: Any) -> tuple[str, dict[str, Any]]:
    """An item of a call's stream as the notification that carries it: ``requestId``
    names the call (stdio, and in-process callers that pass ``notify``)."""
    return NOTIFICATIONS[item.kind], {"requestId": request_id, "eventId": item.event_id, **item.payload}


def event_notifications(item: StreamItem) -> list[tuple[str, dict[str, Any]]]:
    """A subscription's event as notifications: the event, then its task update if it is one."""
    sent = [(NOTIFICATIONS[item.kind], item.payload)]
    if item.update is not None:
        sent.append((item.update.notification, item.update.payload))
    return sent


class LiveStream(Protocol):
    """The stream after a response: iterate it; ``close`` it if it is never iterated."""

    def __aiter__(self) -> AsyncIterator[StreamItem]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Followed:
    """A handler's result followed by a live stream, named by ``key`` (a subscription's id)."""

    result: Any
    items: LiveStream
    key: str


class Call:
    """One dispatched request, as ``A2ALocalFacade.open`` hands it to a transport.

    Answered at once: ``response`` is set (a unary result, or an error), and ``follow``
    may hold a live stream to send after it. Streaming: ``response`` is ``None``;
    iterate the call for its items. An error ends the iteration and is kept in
    ``error`` (a wire error object, in the method's dialect); ``final_response()`` is
    the last item as the call's response, or that error.
    """

    __slots__ = ("id", "response", "follow", "follow_key", "error", "_items", "_first", "_last", "_map_error")

    def __init__(self, msg_id: Any, response: A2AResponse | None = None, *,
                 follow: LiveStream | None = None, follow_key: str | None = None):
        self.id = msg_id
        self.response = response
        self.follow = follow
        self.follow_key = follow_key
        self.error: dict[str, Any] | None = None
        self._items: AsyncIterator[StreamItem] | None = None
        self._first: StreamItem | None = None
        self._last: StreamItem | None = None
        self._map_error: ErrorMapper | None = None

    @classmethod
    async def streaming(cls, msg_id: Any, items: AsyncIterator[StreamItem], map_error: ErrorMapper) -> Call:
        """A streaming call whose first item is read already: a stream refused before
        its first item is answered at once with its error."""
        from cleveragents.a2a.models import A2AErrorDetail, A2AResponse

        call = cls(msg_id)
        call._map_error = map_error
        try:
            first = await items.__anext__()
        except asyncio.CancelledError:
            await _close(items)
            raise
        except StopAsyncIteration:
            error = map_error(RuntimeError("the stream ended before its first item"))
            return cls(msg_id, A2AResponse(id=msg_id, error=A2AErrorDetail(**error)))
        except Exception as exc:
            await _close(items)
            return cls(msg_id, A2AResponse(id=msg_id, error=A2AErrorDetail(**map_error(exc))))
        call._items, call._first = items, first
        return call

    def __aiter__(self) -> Call:
        return self

    async def __anext__(self) -> StreamItem:
        if (item := self._first) is not None:
            self._first = None
        elif self._items is None:
            raise StopAsyncIteration
        else:
            try:
                item = await self._items.__anext__()
            except StopAsyncIteration:
                self._items = None
                raise
            except Exception as exc:
                self._items = None
                assert self._map_error is not None
                self.error = self._map_error(exc)
                raise StopAsyncIteration from None
        self._last = item
        return item

    def final_response(self) -> A2AResponse:
        """The streaming call's answer as one response: its last item, or its error."""
        if self.response is not None:
            return self.response
        from cleveragents.a2a.models import A2AErrorDetail, A2AResponse

        if self.error is not None:
            return A2AResponse(id=self.id, error=A2AErrorDetail(**self.error))
        assert self._last is not None  # a stream has a first item
        return A2AResponse.of_result(self.id, self._last.payload)

    async def aclose(self) -> None:
        """Stop reading: the handler's iterator is closed (its task keeps running)."""
        items, self._items, self._first = self._items, None, None
        if items is not None:
            await _close(items)
        if self.follow is not None:
            self.follow.close()


async def _close(items: AsyncIterator[Any]) -> None:
    if callable(aclose := getattr(items, "aclose", None)):
        with contextlib.suppress(Exception):
            await aclose()
