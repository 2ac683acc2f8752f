"""``POST {prefix}/a2a``: JSON-RPC 2.0 over HTTP, both A2A dialects.

One message per request (no batches, as on stdio). Streaming methods answer with
SSE in which each ``data:`` is a complete JSON-RPC response carrying the request's
id, an error included (one refused at once is the stream's only event: clients of
streaming methods read the event stream); ``_cleveragents/event/subscribe`` with ``Accept: text/event-stream`` answers with
its response and then the events, each with its ULID as the SSE ``id``, so
``Last-Event-ID`` resumes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from cleveragents.a2a import dialects, envelope, methods
from cleveragents.a2a.errors import ContentTypeNotSupportedError, error_payload
from cleveragents.a2a.facade import CallContext
from cleveragents.a2a.streams import EVENT_NOTIFICATION, StreamItem
from cleveragents.transports.http.auth import Caller, Refusal
from cleveragents.transports.http.body_reads import TooManyBodies
from cleveragents.transports.http.connections import mark_refused
from cleveragents.transports.http.media import A2A_JSON, JSON, json_answer
from cleveragents.transports.http.sse import EventStreamResponse, ServerSentEvent, sse_event
from cleveragents.transports.http.streams import ERROR, StreamCall, one_event, resuming, sse_response
from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE

if TYPE_CHECKING:
    from cleveragents.transports.http.app import A2AHttpApp

logger = logging.getLogger("cleveragents.http")

JSON_TYPES = (JSON, A2A_JSON, "application/json-rpc")
MAX_BODY_BYTES = DEFAULT_MAX_MESSAGE_SIZE  # as on stdio
UNAUTHENTICATED_BODY_BYTES = 64 * 1024
# Notifications are answered 202 at once and run afterwards; past this many still running, a new
# one runs before its 202, so a caller that sends them without end waits on its own connection.
MAX_BACKGROUND_CALLS = 64


class BodyTooLarge(Exception):
    pass


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, refusing (without holding it) one larger than ``limit``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def too_large(request: Request, limit: int = MAX_BODY_BYTES) -> Response:
    error = {"code": -32600, "message": "Invalid request: the body is too large",
             "data": {"max_message_size": limit}}
    return json_answer(request, envelope.error_response(None, error), 413)
EVENT_STREAM = "text/event-stream"


def answer(request: Request, response: Any, headers: dict[str, str] | None = None) -> Response:
    """A facade response as HTTP 200, serialized once (``A2AResponse.json_bytes``)."""
    return json_answer(request, response.json_bytes(), headers=headers)


def is_json(request: Request) -> bool:
    """Whether the body is declared JSON (parameters such as charset aside). A missing
    Content-Type is not: a browser sends a cross-site POST without a preflight only
    with none or a form or text type, and such a request must never run a method."""
    content_type = request.headers.get("content-type")
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media in JSON_TYPES or media.endswith("+json")


def wants_events(request: Request) -> bool:
    return EVENT_STREAM in request.headers.get("accept", "")


def _dialect_of(message: Any, standard_only: bool = False) -> str:
    """The dialect to answer a refused request in: its method's, else 0.3 (the
    standard table, without ErrorInfo). ``standard_only``: the error has a code in
    the A2A table only."""
    method = message.get("method") if isinstance(message, dict) else None
    spec = methods.get(method) if isinstance(method, str) else None
    if spec is None or (standard_only and spec.dialect not in dialects.STANDARD):
        return dialects.A2A_V03
    return spec.dialect


class JsonRpcEndpoint:
    def __init__(self, app: A2AHttpApp):
        self.app = app
        self._background: set[asyncio.Task[Any]] = set()

    async def handle(self, request: Request) -> Response | EventStreamResponse:
        # A caller without a credential is read only far enough to echo its id in the 401.
        caller = await self.app.auth.authenticate(request.headers)
        allowed = isinstance(caller, Caller)
        mark_refused(request.scope, reading=not allowed)
        try:
            with self.app.body_reads.reading(caller) if isinstance(caller, Caller) else contextlib.nullcontext():
                body = await read_body(request, MAX_BODY_BYTES if allowed else UNAUTHENTICATED_BODY_BYTES)
        except TooManyBodies as exc:
            return self.refused(request, None, exc.refusal)
        except BodyTooLarge:
            return too_large(request) if isinstance(caller, Caller) else self.refused(request, None, caller)
        except ClientDisconnect:  # gone, or cut off (the body timeout, room made): no one to answer
            return Response(status_code=499)
        finally:
            mark_refused(request.scope, reading=False)
        incoming = envelope.read(body)
        message = incoming.message
        if isinstance(caller, Refusal):
            return self.refused(request, message, caller)
        if not is_json(request):
            error = ContentTypeNotSupportedError(
                "Content type not supported: send application/json",
                {"content_type": request.headers.get("content-type", ""), "supported": list(JSON_TYPES)})
            payload = error_payload(error, _dialect_of(message, standard_only=True))
            return json_answer(request, envelope.error_response(envelope.echo_id(message), payload), 415)
        if incoming.refusal is not None:
            return json_answer(request, incoming.refusal)
        kind = incoming.kind
        if kind == "response":
            return Response(status_code=202)
        if (refusal := self.app.auth.authorize(caller, message["method"])) is not None:
            return self.refused(request, message, refusal)
        facade = await self.app.facade(request)
        if kind == "notification":
            context = self.app.call_context(request, message["method"], None, caller)
            if len(self._background) < MAX_BACKGROUND_CALLS:
                self._run_in_background(facade, message, context)
            else:
                await facade.respond(message, context)
            return Response(status_code=202)
        spec = methods.get(message["method"])
        context = self.app.call_context(request, message["method"], message.get("id"), caller)
        try:
            if spec is not None and spec.streaming:
                message = resuming(message, request.headers, spec.resume_param)
                return await self._stream(request, facade, message, context)
            if spec is not None and spec.ends_with_client:
                response = await self.app.until_disconnect(request, facade.respond(message, context))
                if response is None:
                    return Response(status_code=499)
            elif wants_events(request):  # a live stream may follow the response
                message = resuming(message, request.headers, spec.resume_param if spec is not None else None)
                return await self._followed(request, facade, message, context)
            else:
                response = await facade.respond(message, context)
            return answer(request, response, self.app.echo(request, context))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return json_answer(request, envelope.failure(message.get("id"), exc, f"{message['method']} (http transport)"))

    def refused(self, request: Request, message: Any, refusal: Refusal) -> Response:
        """A 401, 403 or 503 from the auth, with the JSON-RPC error in the request's dialect."""
        body = envelope.error_response(envelope.echo_id(message), error_payload(refusal.error, _dialect_of(message)))
        return json_answer(request, body, refusal.status, refusal.headers)

    async def subscribe_get(self, request: Request, params: dict[str, Any]) -> Response | EventStreamResponse:
        """``GET {prefix}/events``: an event subscription for EventSource clients."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": "events", "method": methods.EVENT_FEED, "params": params}
        caller = await self.app.auth.authenticate(request.headers)
        refusal = caller if isinstance(caller, Refusal) else self.app.auth.authorize(caller, methods.EVENT_FEED)
        if refusal is not None:
            return self.refused(request, message, refusal)
        assert isinstance(caller, Caller)
        facade = await self.app.facade(request)
        context = self.app.call_context(request, message["method"], message["id"], caller)
        spec = methods.METHODS[methods.EVENT_FEED]
        return await self._followed(request, facade, resuming(message, request.headers, spec.resume_param), context)

    def _run_in_background(self, facade: Any, message: dict[str, Any], context: CallContext) -> None:
        task = asyncio.ensure_future(facade.respond(message, context))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _stream(self, request: Request, facade: Any, message: dict[str, Any],
                      context: CallContext) -> Response | EventStreamResponse:
        msg_id = message.get("id")
        call = StreamCall(facade, message, context)
        first = await call.first()
        headers = self.app.echo(request, context)  # the facade has checked the extensions by now
        if isinstance(first, dict):
            return one_event(envelope.error_response(msg_id, first), headers=headers)

        head = '{"jsonrpc":"2.0","id":%s,"result":' % json.dumps(msg_id)

        def frame(kind: str, value: Any) -> Any:
            if kind == ERROR:
                return {"jsonrpc": "2.0", "id": msg_id, "error": value}
            return head + value + "}"  # the item is JSON text already

        return sse_response(call, first, frame, headers=headers)

    async def _followed(self, request: Request, facade: Any, message: dict[str, Any],
                        context: CallContext) -> Response | EventStreamResponse:
        """A call whose response a live stream may follow (an event subscription): the
        response, then the stream, as SSE; or the response alone."""
        context.push = True
        call = await facade.open(message, context)
        headers = self.app.echo(request, context)
        if call.follow is None:
            return answer(request, call.response, headers)
        follow = call.follow

        async def close() -> None:
            follow.close()

        return EventStreamResponse(event_stream(follow, call.response.to_wire()), headers=headers, on_close=close)


async def event_stream(items: AsyncIterable[StreamItem], first: dict[str, Any] | None) -> AsyncIterator[ServerSentEvent]:
    """The SSE events of an event subscription: each ``data`` is a JSON-RPC
    notification; task and plan events are ``task/*`` ones."""
    try:
        if first is not None:
            yield sse_event(first)
        async for item in items:
            method, params = EVENT_NOTIFICATION, item.payload
            if item.update is not None:
                method, params = item.update.notification, {**item.update.payload, **params}
            yield sse_event({"jsonrpc": "2.0", "method": method, "params": params},
                                  event=item.event_type, id=item.event_id)
    finally:
        if callable(close := getattr(items, "close", None)):
            with contextlib.suppress(Exception):
                close()


__all__ = ["JsonRpcEndpoint", "event_stream", "is_json", "read_body"]
