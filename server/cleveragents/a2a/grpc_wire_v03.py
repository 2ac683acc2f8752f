"""The A2A 0.3 gRPC binding's messages and statuses: ``a2a.v1.A2AService`` of the
v0.3.0 ``a2a_v0_3.proto`` (vendored in ``grpc_proto/``), as a2a-sdk 0.3.x clients call it.

Each RPC is a 0.3 JSON-RPC method (``GetTask`` is ``tasks/get``). A request message's
ProtoJSON is the 0.3 HTTP+JSON binding's body, so ``proto_v03`` turns it into the
method's params, and the method's result back into the response message; what only
gRPC has is here: resource names (``tasks/{id}``) in place of path parameters, and the
card as a proto ``AgentCard`` (``proto_v03.card_out``). An error travels as the status
the 0.3 SDK's gRPC server sends for it, with details ``"<ErrorName>: <message>"``,
which the SDK's 0.3 gRPC transport reads back into the named error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cleveragents.a2a import grpc_wire, proto_v03
from cleveragents.a2a.errors import INTERNAL_ERROR, ValidationError
from cleveragents.a2a.grpc_proto import pool

SERVICE = pool.SERVICE_V03
VERSION = "0.3"
Json = dict[str, Any]

# 0.3 JSON-RPC code -> (the A2A error's name, the gRPC status the 0.3 SDK's server sends).
STATUS_BY_CODE: dict[int, tuple[str, str]] = {
    -32700: ("JSONParseError", "INTERNAL"),
    -32600: ("InvalidRequestError", "INVALID_ARGUMENT"),
    -32601: ("MethodNotFoundError", "NOT_FOUND"),
    -32602: ("InvalidParamsError", "INVALID_ARGUMENT"),
    -32603: ("InternalError", "INTERNAL"),
    -32001: ("TaskNotFoundError", "NOT_FOUND"),
    -32002: ("TaskNotCancelableError", "UNIMPLEMENTED"),
    -32003: ("PushNotificationNotSupportedError", "UNIMPLEMENTED"),
    -32004: ("UnsupportedOperationError", "UNIMPLEMENTED"),
    -32005: ("ContentTypeNotSupportedError", "UNIMPLEMENTED"),
    -32006: ("InvalidAgentResponseError", "INTERNAL"),
    -32007: ("AuthenticatedExtendedCardNotConfiguredError", "FAILED_PRECONDITION"),
    -32008: ("ExtensionSupportRequiredError", "FAILED_PRECONDITION"),
    -32009: ("VersionNotSupportedError", "FAILED_PRECONDITION"),
}
# What the 0.3 SDK has no name for: the status our 1.0 binding gives it.
_STATUS_BY_DATA_REASON = {"storage_full": "RESOURCE_EXHAUSTED"}

_TASK = re.compile(r"tasks/([^/]+)")
_CONFIG = re.compile(r"tasks/([^/]+)/pushNotificationConfigs/([^/]+)")


@dataclass(frozen=True, slots=True)
class Rpc:
    """One RPC of the 0.3 ``A2AService``: the 0.3 JSON-RPC method it is, and how its
    request becomes the method's params and the result its response."""

    name: str
    method: str
    request: str  # a message of a2a_v0_3.proto
    response: str  # a message of a2a_v0_3.proto, or EMPTY
    params: Callable[[Json], Json]  # the request's ProtoJSON -> the method's params
    result: Callable[[Any], Any]  # the method's result (or a stream item) -> the response's ProtoJSON
    streaming: bool = False


def _task_name(name: Any) -> str:
    """The task id of ``tasks/{id}``; a bad name is invalid params, as the SDK's server says."""
    match = _TASK.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise ValidationError(f"Bad resource name {name!r}: expected tasks/{{id}}", {"name": name})
    return match.group(1)


def _config_name(name: Any) -> tuple[str, str]:
    match = _CONFIG.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise ValidationError(f"Bad resource name {name!r}: expected tasks/{{id}}/pushNotificationConfigs/{{id}}",
                                 {"name": name})
    return match.group(1), match.group(2)


def _get(body: Json) -> Json:
    params: Json = {"id": _task_name(body.get("name"))}
    if length := proto_v03.field(body, "history_length"):  # proto3's 0 is unset
        params["historyLength"] = length
    return params


def _task(body: Json) -> Json:
    return {"id": _task_name(body.get("name"))}


def _config(body: Json) -> Json:
    task_id, config_id = _config_name(body.get("name"))
    return {"id": task_id, "pushNotificationConfigId": config_id}


def _create_config(body: Json) -> Json:
    return proto_v03.push_params_in(body, _task_name(body.get("parent")))


def _list_configs(body: Json) -> Json:
    return {"id": _task_name(body.get("parent"))}


def _configs(result: Any) -> Json:
    return proto_v03.push_list_out(result.get("configs") if isinstance(result, dict) else result)


def _nothing(_: Any) -> None:
    return None


def _no_params(_: Json) -> Json:
    return {}


EMPTY = "google.protobuf.Empty"
RPCS: dict[str, Rpc] = {rpc.name: rpc for rpc in (
    Rpc("SendMessage", "message/send", "SendMessageRequest", "SendMessageResponse", proto_v03.send_params_in,
        proto_v03.stream_item_out),
    Rpc("SendStreamingMessage", "message/stream", "SendMessageRequest", "StreamResponse", proto_v03.send_params_in,
        proto_v03.stream_item_out, streaming=True),
    Rpc("GetTask", "tasks/get", "GetTaskRequest", "Task", _get, proto_v03.task_out),
    Rpc("CancelTask", "tasks/cancel", "CancelTaskRequest", "Task", _task, proto_v03.task_out),
    Rpc("TaskSubscription", "tasks/resubscribe", "TaskSubscriptionRequest", "StreamResponse", _task,
        proto_v03.stream_item_out, streaming=True),
    Rpc("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set",
        "CreateTaskPushNotificationConfigRequest", "TaskPushNotificationConfig", _create_config, proto_v03.push_out),
    Rpc("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig", _config, proto_v03.push_out),
    Rpc("ListTaskPushNotificationConfig", "tasks/pushNotificationConfig/list",
        "ListTaskPushNotificationConfigRequest", "ListTaskPushNotificationConfigResponse", _list_configs, _configs),
    Rpc("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete",
        "DeleteTaskPushNotificationConfigRequest", EMPTY, _config, _nothing),
    Rpc("GetAgentCard", "agent/getAuthenticatedExtendedCard", "GetAgentCardRequest", "AgentCard", _no_params,
        proto_v03.card_out),
)}


def message_class(name: str) -> Any:
    """The class of a message of a2a_v0_3.proto (``Task``), or of EMPTY."""
    return pool.message_class(name if name == EMPTY else f"{pool.PACKAGE_V03}.{name}")


def from_dict(value: Any, name: str) -> Any:
    """A 0.3 ProtoJSON value as the message ``name`` (``grpc_wire.ConversionError`` when
    it isn't one)."""
    return grpc_wire.from_dict(value, name, message_class)


def path(rpc: Rpc) -> str:
    """The RPC's method path on the wire: ``/a2a.v1.A2AService/GetTask``."""
    return f"/{SERVICE}/{rpc.name}"


def status(error: Mapping[str, Any]) -> tuple[str, str]:
    """(google.rpc.Code name, details) of a 0.3 JSON-RPC error object: the status and
    ``"<ErrorName>: <message>"``, as the 0.3 SDK's gRPC server aborts with them."""
    code = error.get("code")
    name, code_name = STATUS_BY_CODE.get(code if isinstance(code, int) else INTERNAL_ERROR,
                                         STATUS_BY_CODE[INTERNAL_ERROR])
    data = error.get("data")
    if isinstance(data, dict):
        code_name = _STATUS_BY_DATA_REASON.get(str(data.get("reason")), code_name)
    return code_name, f"{name}: {error.get('message', '')}"
