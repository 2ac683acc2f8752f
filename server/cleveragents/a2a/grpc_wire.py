"""The A2A 1.0 gRPC binding's messages and statuses, as our server and client read them.

A2A 1.0's JSON form is ProtoJSON of the messages of ``a2a.proto``, which is what the
core already serves. So the binding only converts: a request message becomes the
JSON-RPC params of the method of the same name, and a result (or a stream item)
becomes the response message (``google.protobuf.json_format``). An error travels as a
gRPC status whose code follows the same table as the HTTP+JSON binding
(``rpc_status.py``), with the 1.0 error's ``google.rpc`` details (``ErrorInfo``, and
``BadRequest`` for bad params) packed in ``grpc-status-details-bin``.

The messages come from the specification's ``a2a.proto`` (v1.0.0, package
``lf.a2a.v1``), vendored in ``grpc_proto/`` and loaded into a descriptor pool of our
own (``grpc_proto/pool.py``), so an a2a-sdk in the same process keeps its own copy.
RPCs are called and served through grpc's generic handlers, with no generated service
code. Everything here imports grpc and protobuf only when first used: the ``grpc``
extra is optional.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cleveragents.a2a import grpc_cost
from cleveragents.a2a.errors import A2A_ERROR_CODES, INTERNAL_ERROR
from cleveragents.a2a.grpc_proto import pool
from cleveragents.a2a.rpc_status import status_of

GRPC = "GRPC"  # the card's protocolBinding
SERVICE = pool.SERVICE
STATUS_DETAILS_KEY = "grpc-status-details-bin"
VERSION_KEY = "a2a-version"  # service parameters travel as (lower-case) metadata
EXTENSIONS_KEY = "a2a-extensions"
EMPTY = "google.protobuf.Empty"
# What the grpc extra adds: module -> the distribution that provides it.
EXTRA = {"grpc": "grpcio", "google.protobuf": "protobuf", "google.rpc": "googleapis-common-protos"}


@dataclass(frozen=True, slots=True)
class Rpc:
    """One RPC of ``A2AService``; its name is also the 1.0 JSON-RPC method's."""

    name: str
    request: str  # a message of a2a.proto
    response: str  # a message of a2a.proto, or EMPTY
    streaming: bool = False


RPCS: dict[str, Rpc] = {rpc.name: rpc for rpc in (
    Rpc("SendMessage", "SendMessageRequest", "SendMessageResponse"),
    Rpc("SendStreamingMessage", "SendMessageRequest", "StreamResponse", streaming=True),
    Rpc("GetTask", "GetTaskRequest", "Task"),
    Rpc("ListTasks", "ListTasksRequest", "ListTasksResponse"),
    Rpc("CancelTask", "CancelTaskRequest", "Task"),
    Rpc("SubscribeToTask", "SubscribeToTaskRequest", "StreamResponse", streaming=True),
    Rpc("CreateTaskPushNotificationConfig", "TaskPushNotificationConfig", "TaskPushNotificationConfig"),
    Rpc("GetTaskPushNotificationConfig", "GetTaskPushNotificationConfigRequest", "TaskPushNotificationConfig"),
    Rpc("ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfigsRequest",
        "ListTaskPushNotificationConfigsResponse"),
    Rpc("DeleteTaskPushNotificationConfig", "DeleteTaskPushNotificationConfigRequest", EMPTY),
    Rpc("GetExtendedAgentCard", "GetExtendedAgentCardRequest", "AgentCard"),
)}

# ErrorInfo reason -> the 1.0 JSON-RPC code of the same error.
_CODE_BY_REASON: dict[str, int] = {}
for _code, _reason in A2A_ERROR_CODES.values():
    _CODE_BY_REASON.setdefault(_reason, _code)
# A status without an ErrorInfo: the reason its gRPC code stands for.
_REASON_BY_STATUS = {"UNAUTHENTICATED": "UNAUTHENTICATED", "PERMISSION_DENIED": "PERMISSION_DENIED",
                     "NOT_FOUND": "METHOD_NOT_FOUND", "UNIMPLEMENTED": "METHOD_NOT_FOUND",
                     "INVALID_ARGUMENT": "INVALID_PARAMS", "RESOURCE_EXHAUSTED": "RESOURCE_EXHAUSTED"}


def missing_extra() -> str | None:
    """Why the gRPC binding can't run in this install, in one line naming what to
    install; None when it can."""
    missing = [dist for module, dist in EXTRA.items() if _absent(module)]
    if not missing:
        return None
    return (f"the grpc extra is not installed (no {', '.join(missing)}); run pip install -e \".[grpc]\" in the "
            "checkout, or pip install " + " ".join(EXTRA.values()))


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package that is missing
        return True


def available() -> bool:
    return missing_extra() is None


def _module(name: str) -> Any:
    """A module of the extra, loaded on first use (protobuf ships no type stubs)."""
    return importlib.import_module(name)


def message_class(name: str) -> Any:
    """The class of a message of a2a.proto (``Task``), or of EMPTY."""
    return pool.message_class(name if name == EMPTY else f"{pool.PACKAGE}.{name}")


def path(rpc: Rpc) -> str:
    """The RPC's method path on the wire."""
    return f"/{SERVICE}/{rpc.name}"


def callables(channel: Any) -> dict[str, Any]:
    """Each RPC's multi-callable on a grpc(.aio) ``channel``, by RPC name: a client stub
    without generated code. Answers come as bytes, for ``read``."""
    stubs = {}
    for rpc in RPCS.values():
        make = channel.unary_stream if rpc.streaming else channel.unary_unary
        stubs[rpc.name] = make(path(rpc), request_serializer=message_class(rpc.request).SerializeToString)
    return stubs


def to_dict(message: Any) -> dict[str, Any]:
    """A message as ProtoJSON: camelCase names, enum names, base64 bytes."""
    value: dict[str, Any] = _module("google.protobuf.json_format").MessageToDict(message)
    return value


class ConversionError(ValueError):
    """A JSON value that is not a valid message of the type."""


# A message this long is read in a worker thread, not on the event loop: MessageToDict
# takes about a microsecond a value, and 16 KiB holds up to 8,192 values (8 ms of it).
READ_IN_THREAD_AT = 16 * 1024
T = TypeVar("T")


async def read_aside(work: Callable[[], T], size: int) -> T:
    """``work``, which reads a message of ``size`` bytes: on the event loop when it is
    short, else in a worker thread (``READ_IN_THREAD_AT``)."""
    return await asyncio.to_thread(work) if size >= READ_IN_THREAD_AT else work()


def read(message_class: Any, data: bytes) -> dict[str, Any]:
    """A serialized message of ``message_class`` as ProtoJSON. ``TooManyValues`` (unparsed)
    when its values would take more than ``MAX_PARSE_COST`` (``grpc_cost``);
    ``MalformedMessage`` for bytes that are not one."""
    descriptor = message_class.DESCRIPTOR
    if not grpc_cost.within_budget(descriptor, data):
        raise grpc_cost.TooManyValues(
            f"the {descriptor.name} holds too many values: they would take more than {grpc_cost.MAX_PARSE_COST} "
            "bytes of memory (counted before parsing)")
    try:
        message = message_class.FromString(data)
    except _module("google.protobuf.message").DecodeError as exc:
        raise grpc_cost.MalformedMessage(f"not a valid {descriptor.name}: {exc}") from None
    return to_dict(message)


def from_dict(value: Any, name: str, classes: Callable[[str], Any] | None = None) -> Any:
    """A ProtoJSON value as the message ``name`` (of ``classes``, by default 1.0's
    ``message_class``); fields the message lacks are dropped (a publisher's card may
    carry keys of its own). ``ConversionError`` otherwise."""
    json_format = _module("google.protobuf.json_format")
    message = (classes or message_class)(name)()
    if value is None and name == EMPTY:
        return message
    if not isinstance(value, dict):
        raise ConversionError(f"{name} must be a JSON object, not {type(value).__name__}")
    try:
        json_format.ParseDict(value, message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as exc:
        raise ConversionError(f"not a valid {name}: {exc}") from None
    return message


# -- statuses ------------------------------------------------------------------------
def status_code_name(error: Mapping[str, Any]) -> str:
    """The google.rpc.Code name of a 1.0 JSON-RPC error object."""
    return status_of(error)[1]


def status_bytes(code_name: str, error: Mapping[str, Any]) -> bytes:
    """The serialized ``google.rpc.Status`` of a 1.0 JSON-RPC error: its message, and
    its details (ErrorInfo, BadRequest) as ``Any``. A detail of a type the process
    doesn't know is left out rather than failing the answer."""
    json_format = _module("google.protobuf.json_format")
    code_pb2, status_pb2 = _module("google.rpc.code_pb2"), _module("google.rpc.status_pb2")
    error_details_pb2 = _module("google.rpc.error_details_pb2")
    known = {f"type.googleapis.com/{cls.DESCRIPTOR.full_name}" for cls in
             (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest)}
    data = error.get("data")
    details = data if isinstance(data, list) else []
    status = status_pb2.Status(code=code_pb2.Code.Value(code_name), message=str(error.get("message", "")))
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") in known:
            one = status_pb2.Status()
            try:
                json_format.ParseDict({"details": [detail]}, one, ignore_unknown_fields=True)
            except json_format.ParseError:
                continue
            status.details.extend(one.details)
    serialized: bytes = status.SerializeToString()
    return serialized


def error_of_status(code_name: str, message: str, metadata: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """A gRPC status as the 1.0 JSON-RPC error object the client reads: its details
    from ``grpc-status-details-bin`` when sent, else an ErrorInfo for what the code
    says (an authentication failure, say)."""
    json_format = _module("google.protobuf.json_format")
    status_pb2 = _module("google.rpc.status_pb2")
    _module("google.rpc.error_details_pb2")  # registers ErrorInfo and the rest, which the details pack
    details: list[dict[str, Any]] = []
    for key, value in metadata:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status()
            try:
                status.ParseFromString(value)
                details = json_format.MessageToDict(status).get("details", [])
                message = status.message or message
            except Exception:  # a malformed status: the code and message still say what failed
                details = []
            break
    info = next((d for d in details if isinstance(d, dict) and "reason" in d), None)
    if info is None and code_name in _REASON_BY_STATUS:
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": _REASON_BY_STATUS[code_name],
                "domain": "a2a-protocol.org"}
        details = [info, *details]
    code = _CODE_BY_REASON.get(str(info.get("reason")), INTERNAL_ERROR) if info is not None else INTERNAL_ERROR
    return {"code": code, "message": message or code_name, "data": details}
