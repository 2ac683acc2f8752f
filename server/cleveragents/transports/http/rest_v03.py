"""The A2A 0.3 HTTP+JSON binding, under ``{prefix}/v1`` (the paths of the v0.3.0
``a2a.proto`` HTTP rules), as a2a-sdk 0.3.x clients and the 1.x SDK's 0.3 transport
call it. Each route dispatches the 0.3 JSON-RPC method it stands for; its body and
result are the 0.3 ProtoJSON (``a2a/proto_v03.py``).

Errors are the HTTP status of the error with a ``google.rpc.Status`` body, as the 1.0
binding sends them, plus the top-level ``type`` (the A2A error's name) and
``message`` that the SDK's 0.3 REST client reads to raise the matching error.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from cleveragents.a2a import proto_v03
from cleveragents.a2a.errors import error_details
from cleveragents.transports.http.rest import RestRoute, RestVersion, status_body

# JSON-RPC code -> (ErrorInfo reason, the A2A error's name).
_ERRORS = {
    -32001: ("TASK_NOT_FOUND", "TaskNotFoundError"),
    -32002: ("TASK_NOT_CANCELABLE", "TaskNotCancelableError"),
    -32003: ("PUSH_NOTIFICATION_NOT_SUPPORTED", "PushNotificationNotSupportedError"),
    -32004: ("UNSUPPORTED_OPERATION", "UnsupportedOperationError"),
    -32005: ("CONTENT_TYPE_NOT_SUPPORTED", "ContentTypeNotSupportedError"),
    -32006: ("INVALID_AGENT_RESPONSE", "InvalidAgentResponseError"),
    -32007: ("EXTENDED_AGENT_CARD_NOT_CONFIGURED", "AuthenticatedExtendedCardNotConfiguredError"),
    -32008: ("EXTENSION_SUPPORT_REQUIRED", "ExtensionSupportRequiredError"),
    -32009: ("VERSION_NOT_SUPPORTED", "VersionNotSupportedError"),
    -32700: ("PARSE_ERROR", "JSONParseError"),
    -32600: ("INVALID_REQUEST", "InvalidRequestError"),
    -32601: ("METHOD_NOT_FOUND", "MethodNotFoundError"),
    -32602: ("INVALID_PARAMS", "InvalidParamsError"),
    -32603: ("INTERNAL", "InternalError"),
}
# A 0.3 error's data says what a 1.0 ErrorInfo reason would: these keep their status.
_DATA_REASONS = {"storage_full": "RESOURCE_EXHAUSTED"}


def status_of(error: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A 0.3 JSON-RPC error (or a 1.0 one, as the binding's own checks make) as (HTTP
    status, body)."""
    data = error.get("data")
    if not isinstance(data, list):
        reason, _ = _ERRORS.get(error.get("code", -32603), _ERRORS[-32603])
        fields = data if isinstance(data, dict) else {}
        reason = _DATA_REASONS.get(str(fields.get("reason")), reason)
        error = {**error, "data": error_details(reason, fields)}
    status, body = status_body(error)
    name = _ERRORS.get(error.get("code", -32603), _ERRORS[-32603])[1]
    return status, {**body, "type": name, "message": error.get("message", "")}


def _push_list(result: Any) -> Any:
    return proto_v03.push_list_out(result.get("configs") if isinstance(result, dict) else result)


def _item(text: str) -> Any:
    return proto_v03.stream_item_out(json.loads(text))


V03 = RestVersion(status_of, _item)


def _send(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return proto_v03.send_params_in(body)


def _task(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": request.path_params["id"]}


def _get(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"id": request.path_params["id"]}
    if (length := request.query_params.get("historyLength", request.query_params.get("history_length"))) is not None:
        params["historyLength"] = length
    return params


def _config(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": request.path_params["id"], "pushNotificationConfigId": request.path_params["push_id"]}


def _config_body(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return proto_v03.push_params_in(body, request.path_params["id"])


def _card(request: Request, body: dict[str, Any]) -> dict[str, Any]:
    return {}


def routes() -> list[RestRoute]:
    """Each route with how its result is written; the card goes as 0.3 has it. The
    SDK's clients send a cancel and a subscription without a body."""
    config = "/v1/tasks/{id}/pushNotificationConfigs"
    return [
        RestRoute("/v1/message:send", "POST", "message/send", _send, proto_v03.stream_item_out),
        RestRoute("/v1/message:stream", "POST", "message/stream", _send),
        RestRoute("/v1/tasks/{id}:cancel", "POST", "tasks/cancel", _task, proto_v03.task_out, bodyless=True),
        RestRoute("/v1/tasks/{id}:subscribe", "GET", "tasks/resubscribe", _task, bodyless=True),
        RestRoute("/v1/tasks/{id}:subscribe", "POST", "tasks/resubscribe", _task, bodyless=True),
        RestRoute(config + "/{push_id}", "GET", "tasks/pushNotificationConfig/get", _config, proto_v03.push_out),
        RestRoute(config + "/{push_id}", "DELETE", "tasks/pushNotificationConfig/delete", _config),
        RestRoute(config, "POST", "tasks/pushNotificationConfig/set", _config_body, proto_v03.push_out),
        RestRoute(config, "GET", "tasks/pushNotificationConfig/list", _task, _push_list),
        RestRoute("/v1/tasks/{id}", "GET", "tasks/get", _get, proto_v03.task_out),
        RestRoute("/v1/card", "GET", "agent/getAuthenticatedExtendedCard", _card),
    ]
