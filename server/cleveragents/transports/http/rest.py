"""The A2A HTTP+JSON (REST) bindings, 1.0 and 0.3 (``rest_v03.py``), over the same
facade as JSON-RPC.

Each route becomes the JSON-RPC call it stands for; results are sent as they are
(1.0) or in the 0.3 binding's ProtoJSON, errors as a ``google.rpc.Status`` with the
HTTP status of its reason (both as ``application/a2a+json`` or ``application/json``,
as the request accepts: ``media.py``), and streams as SSE whose ``data:`` is a
``StreamResponse``. ``RestVersion`` holds what differs between the two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from cleveragents.a2a import dialects, envelope, methods
from cleveragents.a2a.errors import (
    ContentTypeNotSupportedError,
    ParseError,
    error_payload,
    internal_error_payload,
)
from cleveragents.a2a.rpc_status import status_of
from cleveragents.transports.http.auth import Caller, Refusal
from cleveragents.transports.http.body_reads import TooManyBodies
from cleveragents.transports.http.cards import extended_card_headers
from cleveragents.transports.http.jsonrpc import JSON_TYPES, BodyTooLarge, is_json, read_body
from cleveragents.transports.http.media import json_answer
from cleveragents.transports.http.sse import EventStreamResponse
from cleveragents.transports.http.streams import ERROR, StreamCall, resuming, sse_response

if TYPE_CHECKING:
    from cleveragents.transports.http.app import A2AHttpApp

CARD_SERVICE = "agent_card_service"
_BOOLEAN_QUERY = ("includeArtifacts", "include_artifacts")  # ProtoJSON: either name


def status_body(error: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A 1.0 JSON-RPC error as (HTTP status, google.rpc.Status body)."""
    details = error.get("data") if isinstance(error.get("data"), list) else []
    http_status, code = status_of(error)
    body: dict[str, Any] = {"code": http_status, "status": code, "message": error.get("message", "")}
    if details:
        body["details"] = details
    return http_status, {"error": body}


ParamsOf = Callable[[Request, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RestVersion:
    """What differs between the 1.0 binding and the 0.3 one."""

    # A JSON-RPC error -> (HTTP status, body). The errors the binding makes itself
    # (auth, content type, a bug) come in the 1.0 dialect, whose ErrorInfo names the
    # reason; the dispatched call's in its own.
    status: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
    item: Callable[[str], Any] | None = None  # a stream item's JSON text -> SSE data (None: as it is)


def as_is(result: Any) -> Any:
    return result if result is not None else {}  # {} for a delete


@dataclass(frozen=True, slots=True)
class RestRoute:
    path: str
    verb: str
    method: str  # the JSON-RPC method it stands for; the method table says if it streams
    params: ParamsOf
    # The result -> the body, in the binding's ProtoJSON (the 1.0 results are sent as they are).
    result: Callable[[Any], Any] = as_is
    # Its POST may come without a body, and so without a content type: a read, or a
    # call the path says all of (the SDK's clients send them so).
    bodyless: bool = False


V1 = RestVersion(status_body)


def error_response(request: Request, exc: Exception, headers: dict[str, str] | None = None,
                   version: RestVersion = V1) -> Response:
    status, body = version.status(error_payload(exc, dialects.A2A_V1))
    return json_answer(request, body, status, headers)


def v1_routes() -> list[RestRoute]:
    return [
        RestRoute("/message:send", "POST", "SendMessage", _body),
        RestRoute("/message:stream", "POST", "SendStreamingMessage", _body),
        RestRoute("/tasks/{id}:cancel", "POST", "CancelTask", _task_body),
        RestRoute("/tasks/{id}:subscribe", "POST", "SubscribeToTask", _task_only, bodyless=True),
        RestRoute("/tasks/{id}:subscribe", "GET", "SubscribeToTask", _task_only, bodyless=True),
        RestRoute("/tasks/{id}/pushNotificationConfigs/{push_id}", "GET", "GetTaskPushNotificationConfig", _config),
        RestRoute("/tasks/{id}/pushNotificationConfigs/{push_id}", "DELETE", "DeleteTaskPushNotificationConfig",
                  _config),
        RestRoute("/tasks/{id}/pushNotificationConfigs", "POST", "CreateTaskPushNotificationConfig", _config_body),
        RestRoute("/tasks/{id}/pushNotificationConfigs", "GET", "ListTaskPushNotificationConfigs", _config_query),
        RestRoute("/tasks/{id}", "GET", "GetTask", _task_query),
        RestRoute("/tasks", "GET", "ListTasks", _query),
        RestRoute("/extendedAgentCard", "GET", "GetExtendedAgentCard", _query),
    ]


class RestBinding:
    def __init__(self, app: A2AHttpApp):
        self.app = app

    def routes(self, prefix: str) -> list[Route]:
        """The 1.0 routes, then the 0.3 ones (under ``/v1``)."""
        from cleveragents.transports.http import rest_v03

        tables = ((V1, v1_routes()), (rest_v03.V03, rest_v03.routes()))
        return [Route(prefix + route.path, self._endpoint(version, route), methods=[route.verb])
                for version, table in tables for route in table]

    def _endpoint(self, version: RestVersion, route: RestRoute) -> Any:
        async def endpoint(request: Request) -> Response | EventStreamResponse:
            return await self.handle(request, version, route)

        endpoint.__name__ = route.method
        return endpoint

    async def handle(self, request: Request, version: RestVersion, route: RestRoute) -> Response | EventStreamResponse:
        method = route.method
        caller = await self.app.auth.authenticate(request.headers)
        refusal = caller if isinstance(caller, Refusal) else self.app.auth.authorize(caller, method)
        if refusal is not None:
            return _refused(request, version, refusal)
        assert isinstance(caller, Caller)
        body: Any = None
        if request.method == "POST":
            try:
                with self.app.body_reads.reading(caller):
                    raw = await read_body(request)
            except TooManyBodies as exc:
                return _refused(request, version, exc.refusal)
            except BodyTooLarge:
                return json_answer(request, {"error": {"code": 413, "status": "INVALID_ARGUMENT",
                                                       "message": "The body is too large"}}, 413)
            except ClientDisconnect:  # gone, or cut off by the body timeout
                return Response(status_code=499)
            # Every POST says JSON, but one that may come bare and does.
            if not is_json(request) and (raw.strip() or not route.bodyless):
                return error_response(request, ContentTypeNotSupportedError(
                    "Content type not supported: send application/a2a+json",
                    {"content_type": request.headers.get("content-type", ""), "supported": list(JSON_TYPES)}),
                    version=version)
            if raw.strip():
                try:
                    body = envelope.decode(raw)
                except ParseError as exc:
                    return error_response(request, exc, version=version)
                if not isinstance(body, dict):
                    return error_response(request, ParseError("The body must be a JSON object"), version=version)
        message = {"jsonrpc": "2.0", "id": "rest", "method": method, "params": route.params(request, body or {})}
        facade = await self.app.facade(request)
        context = self.app.call_context(request, method, "rest", caller)
        spec = methods.get(method)
        try:
            if spec is not None and spec.streaming:
                message = resuming(message, request.headers, spec.resume_param)
                return await self._stream(request, version, facade, message, context)
            response = await facade.respond(message, context)
        except Exception as exc:
            status, content = version.status(internal_error_payload(exc, dialects.A2A_V1, f"{method} (http+json)"))
            return json_answer(request, content, status)
        headers = self.app.echo(request, context)
        if response.error is not None:
            status, content = version.status(response.to_wire()["error"])
            return json_answer(request, content, status, headers)
        if spec is not None and spec.service == CARD_SERVICE:  # the extended card: the caller's own
            headers = {**(headers or {}), **extended_card_headers(self.app.auth)}
        return json_answer(request, route.result(response.result), headers=headers)

    async def _stream(self, request: Request, version: RestVersion, facade: Any, message: dict[str, Any],
                      context: Any) -> Response | EventStreamResponse:
        call = StreamCall(facade, message, context)
        first = await call.first()
        headers = self.app.echo(request, context)  # the facade has checked the extensions by now
        if isinstance(first, dict):
            status, content = version.status(first)
            return json_answer(request, content, status, headers)

        def frame(kind: str, value: Any) -> Any:
            if kind == ERROR:
                return version.status(value)[1]
            return value if version.item is None else version.item(value)

        return sse_response(call, first, frame, error_event="error", headers=headers)


# -- params of each route ------------------------------------------------------------
def _query(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key in request.query_params:
        values = request.query_params.getlist(key)
        value: Any = values if len(values) > 1 else values[0]
        if key in _BOOLEAN_QUERY and isinstance(value, str):
            value = {"true": True, "1": True, "false": False, "0": False}.get(value.lower(), value)
        params[key] = value
    return params


def _body(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return dict(body)


def _task_only(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": request.path_params["id"]}


def _task_body(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "id": request.path_params["id"]}


def _task_query(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {**_query(request, body), "id": request.path_params["id"]}


def _config(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {"taskId": request.path_params["id"], "id": request.path_params["push_id"]}


def _config_body(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "taskId": request.path_params["id"]}


def _config_query(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {**_query(request, body), "taskId": request.path_params["id"]}


_STATUS_OF_REFUSAL = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}


def _refused(request: Request, version: RestVersion, refusal: Refusal) -> Response:
    """A request that does not get in, in the REST error shape."""
    _, content = version.status(error_payload(refusal.error, dialects.A2A_V1))
    if refusal.status in _STATUS_OF_REFUSAL:  # a bound or the keys' server, not a fault of the request
        content["error"].update(code=refusal.status, status=_STATUS_OF_REFUSAL[refusal.status])
    return json_answer(request, content, refusal.status, refusal.headers)
