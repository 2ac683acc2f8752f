"""The A2A 1.0 HTTP+JSON (REST) binding, over the same facade as JSON-RPC.

Each route becomes the 1.0 JSON-RPC call it stands for; results are sent as they
are, errors as a ``google.rpc.Status`` with the HTTP status of its reason (both as
``application/a2a+json`` or ``application/json``, as the request accepts: ``media.py``),
and streams as SSE whose ``data:`` is a ``StreamResponse``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from cleveragents.a2a import dialects, envelope
from cleveragents.a2a.errors import (
    AuthenticationError,
    ContentTypeNotSupportedError,
    ParseError,
    error_payload,
    internal_error_payload,
)
from cleveragents.transports.http.jsonrpc import JSON_TYPES, BodyTooLarge, is_json, read_body
from cleveragents.transports.http.media import json_answer
from cleveragents.transports.http.streams import ERROR, StreamCall, resuming, sse_response

if TYPE_CHECKING:
    from cleveragents.transports.http.app import A2aHttpApp

# ErrorInfo reason -> (HTTP status, google.rpc.Code name).
_STATUS_BY_REASON = {
    "TASK_NOT_FOUND": (404, "NOT_FOUND"),
    "RECORD_UNREADABLE": (500, "DATA_LOSS"),  # the stored record is damaged: not the caller's fault
    "METHOD_NOT_FOUND": (404, "NOT_FOUND"),
    "INVALID_PARAMS": (400, "INVALID_ARGUMENT"),
    "INVALID_REQUEST": (400, "INVALID_ARGUMENT"),
    "PARSE_ERROR": (400, "INVALID_ARGUMENT"),
    "CONTENT_TYPE_NOT_SUPPORTED": (415, "INVALID_ARGUMENT"),
    "UNAUTHENTICATED": (401, "UNAUTHENTICATED"),
    "PERMISSION_DENIED": (403, "PERMISSION_DENIED"),
    "ALREADY_EXISTS": (409, "ALREADY_EXISTS"),
    "RESOURCE_EXHAUSTED": (429, "RESOURCE_EXHAUSTED"),
    "INVALID_AGENT_RESPONSE": (502, "INTERNAL"),
    "INTERNAL": (500, "INTERNAL"),
}
_PRECONDITION = (400, "FAILED_PRECONDITION")
_BOOLEAN_QUERY = ("includeArtifacts",)


def status_body(error: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A 1.0 JSON-RPC error as (HTTP status, google.rpc.Status body)."""
    details = error.get("data") if isinstance(error.get("data"), list) else []
    info = next((d for d in details if isinstance(d, dict) and "reason" in d), {})
    reason = info.get("reason", "INTERNAL")
    http_status, code = _STATUS_BY_REASON.get(reason, _PRECONDITION)
    if (info.get("metadata") or {}).get("reason") == "storage_full":
        http_status = 507  # Insufficient Storage: a full disk, not a rate limit to retry after
    body: dict[str, Any] = {"code": http_status, "status": code, "message": error.get("message", "")}
    if details:
        body["details"] = details
    return http_status, {"error": body}


def error_response(request: Request, exc: Exception, headers: dict[str, str] | None = None) -> Response:
    status, body = status_body(error_payload(exc, dialects.A2A_V1))
    return json_answer(request, body, status, headers)


class RestBinding:
    def __init__(self, app: A2aHttpApp):
        self.app = app

    def routes(self, prefix: str) -> list[Route]:
        table: list[tuple[str, str, str, Any]] = [
            ("/message:send", "POST", "SendMessage", _body),
            ("/message:stream", "POST", "SendStreamingMessage", _body),
            ("/tasks/{id}:cancel", "POST", "CancelTask", _task_body),
            ("/tasks/{id}:subscribe", "POST", "SubscribeToTask", _task_only),
            ("/tasks/{id}:subscribe", "GET", "SubscribeToTask", _task_only),
            ("/tasks/{id}/pushNotificationConfigs/{push_id}", "GET", "GetTaskPushNotificationConfig", _config),
            ("/tasks/{id}/pushNotificationConfigs/{push_id}", "DELETE", "DeleteTaskPushNotificationConfig", _config),
            ("/tasks/{id}/pushNotificationConfigs", "POST", "CreateTaskPushNotificationConfig", _config_body),
            ("/tasks/{id}/pushNotificationConfigs", "GET", "ListTaskPushNotificationConfigs", _config_query),
            ("/tasks/{id}", "GET", "GetTask", _task_query),
            ("/tasks", "GET", "ListTasks", _query),
            ("/extendedAgentCard", "GET", "GetExtendedAgentCard", _query),
        ]
        return [Route(prefix + path, self._endpoint(method, params), methods=[verb])
                for path, verb, method, params in table]

    def _endpoint(self, method: str, params_of: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            return await self.handle(request, method, params_of)

        endpoint.__name__ = method
        return endpoint

    async def handle(self, request: Request, method: str, params_of: Any) -> Response:
        if not self.app.auth.allows(request.headers):
            error = AuthenticationError("Authentication required", {"schemes": self.app.auth.schemes()})
            return error_response(request, error, {"WWW-Authenticate": self.app.auth.challenge()})
        body: Any = None
        if request.method == "POST":
            try:
                raw = await read_body(request)
            except BodyTooLarge:
                return json_answer(request, {"error": {"code": 413, "status": "INVALID_ARGUMENT",
                                                       "message": "The body is too large"}}, 413)
            except ClientDisconnect:  # gone, or cut off by the body timeout
                return Response(status_code=499)
            # Every POST says JSON, but a bare subscription (a read, sent so by the SDK's client).
            if not is_json(request) and (raw.strip() or method != "SubscribeToTask"):
                return error_response(request, ContentTypeNotSupportedError(
                    "Content type not supported: send application/a2a+json",
                    {"content_type": request.headers.get("content-type", ""), "supported": list(JSON_TYPES)}))
            if raw.strip():
                try:
                    body = envelope.decode(raw)
                except ParseError as exc:
                    return error_response(request, exc)
                if not isinstance(body, dict):
                    return error_response(request, ParseError("The body must be a JSON object"))
        params = params_of(request, body or {})
        message = {"jsonrpc": "2.0", "id": "rest", "method": method, "params": params}
        facade = await self.app.facade(request)
        context = self.app.call_context(request, method, "rest")
        try:
            if method == "SubscribeToTask":
                return await self._stream(request, facade, resuming(message, request.headers), context)
            if method == "SendStreamingMessage":
                return await self._stream(request, facade, message, context)
            response = await facade.respond(message, context)
        except Exception as exc:
            payload = internal_error_payload(exc, dialects.A2A_V1, f"{method} (http+json)")
            status, content = status_body(payload)
            return json_answer(request, content, status)
        if response.error is not None:
            status, content = status_body(response.to_wire()["error"])
            return json_answer(request, content, status)
        return json_answer(request, response.result if response.result is not None else {})

    async def _stream(self, request: Request, facade: Any, message: dict[str, Any], context: Any) -> Response:
        call = StreamCall(facade, message, context)
        first = await call.next()
        if first[0] != "item":
            await call.close()
            error = first[1] if first[0] == ERROR else {"message": "The stream ended early"}
            status, content = status_body(error)
            return json_answer(request, content, status)

        def frame(kind: str, value: Any) -> Any:
            return status_body(value)[1] if kind == ERROR else value

        return sse_response(call, first, frame, error_event="error")


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
