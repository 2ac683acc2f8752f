"""The A2A exception hierarchy and the two error-code tables.

Standard A2A methods answer with the A2A specification's codes; ``_cleveragents/*``
and legacy methods answer with the project's extension table. Both tables live here,
next to the classes they map from, and ``error_payload`` is the only place that turns
an exception into a JSON-RPC ``error`` object.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from cleveragents.a2a import dialects
from cleveragents.domain.errors import (
    AuthenticationError,
    AuthorizationError,
    BudgetExceededError,
    BusinessRuleViolation,
    DomainError,
    DuplicateEntityError,
    PlanError,
    ResourceNotFoundError,
    StructuredError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnreadableRecordError,
    ValidationError,
)

# JSON-RPC 2.0 codes, shared by every dialect.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

logger = logging.getLogger(__name__)

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
ERROR_DOMAIN = "a2a-protocol.org"


class A2AError(StructuredError):
    """Base A2A exception."""

    default_message = "A2A error"


class A2ANotAvailableError(A2AError):
    """The operation exists but is not available here: its service is not configured."""

    default_message = "Operation not available"


class A2AOperationNotFoundError(A2AError):
    """No method of that name exists."""

    def __init__(self, operation: str, message: str | None = None):
        self.operation = operation
        super().__init__(message or f"Method not found: {operation}", {"method": operation})


class A2AVersionMismatchError(A2AError):
    default_message = "A2A version not supported"


class InvalidRequestError(A2AError):
    """The JSON-RPC envelope itself is wrong."""

    default_message = "Invalid request"


class ParseError(A2AError):
    default_message = "Parse error"


class PushNotificationNotSupportedError(A2AError):
    """The agent card turns push notifications off."""

    default_message = "Push notifications are not supported"


class UnsupportedOperationError(A2AError):
    """The agent does not offer this operation: its card turns the capability off."""

    default_message = "Operation not supported"


class ContentTypeNotSupportedError(A2AError):
    default_message = "Content type not supported"


class InvalidAgentResponseError(A2AError):
    default_message = "Invalid agent response"


class ExtendedAgentCardNotConfiguredError(A2AError):
    default_message = "Extended agent card is not configured"


class ExtensionSupportRequiredError(A2AError):
    default_message = "A required extension was not activated by the request"


class StorageFullError(A2AError):
    """A write failed for lack of space: the server's fault to report, not the caller's."""

    default_message = "Internal error: no space left to write"


class StorageIoError(A2AError):
    """The state database could not be read or written (SQLite's I/O error)."""

    default_message = "Internal error: the state database could not be written"


# Errors that say the disk (or a quota, or the file size limit) is full.
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_SQLITE_FULL = 13  # SQLITE_FULL: "database or disk is full"
_SQLITE_IOERR = 10  # SQLITE_IOERR: "disk I/O error" (what a file size limit gives)


# The extension table: `_cleveragents/*` and legacy methods.
EXTENSION_ERROR_CODES: dict[type[Exception], int] = {
    ParseError: PARSE_ERROR,
    InvalidRequestError: INVALID_REQUEST,
    A2AOperationNotFoundError: METHOD_NOT_FOUND,
    ValidationError: INVALID_PARAMS,
    ResourceNotFoundError: -32001,
    UnreadableRecordError: -32001,
    AuthenticationError: -32002,
    AuthorizationError: -32003,
    BusinessRuleViolation: -32004,
    A2ANotAvailableError: -32004,
    UnsupportedOperationError: -32004,
    DuplicateEntityError: -32005,
    BudgetExceededError: -32006,
    A2AVersionMismatchError: -32007,
    PlanError: -32008,
}

# The A2A specification's table: standard methods, both dialects. The reason is the
# `google.rpc.ErrorInfo` reason sent in the 1.0 dialect.
A2A_ERROR_CODES: dict[type[Exception], tuple[int, str]] = {
    ParseError: (PARSE_ERROR, "PARSE_ERROR"),
    InvalidRequestError: (INVALID_REQUEST, "INVALID_REQUEST"),
    A2AOperationNotFoundError: (METHOD_NOT_FOUND, "METHOD_NOT_FOUND"),
    ValidationError: (INVALID_PARAMS, "INVALID_PARAMS"),
    TaskNotFoundError: (-32001, "TASK_NOT_FOUND"),
    ResourceNotFoundError: (-32001, "TASK_NOT_FOUND"),
    # Not found in a form that can be served; the reason says so, and the data why.
    UnreadableRecordError: (-32001, "RECORD_UNREADABLE"),
    TaskNotCancelableError: (-32002, "TASK_NOT_CANCELABLE"),
    PushNotificationNotSupportedError: (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    A2ANotAvailableError: (-32004, "UNSUPPORTED_OPERATION"),
    UnsupportedOperationError: (-32004, "UNSUPPORTED_OPERATION"),
    BusinessRuleViolation: (-32004, "UNSUPPORTED_OPERATION"),
    ContentTypeNotSupportedError: (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
    InvalidAgentResponseError: (-32006, "INVALID_AGENT_RESPONSE"),
    ExtendedAgentCardNotConfiguredError: (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    ExtensionSupportRequiredError: (-32008, "EXTENSION_SUPPORT_REQUIRED"),
    A2AVersionMismatchError: (-32009, "VERSION_NOT_SUPPORTED"),
    # The specification has no codes for these; they are request errors whose
    # ErrorInfo reason says what went wrong.
    AuthenticationError: (INVALID_REQUEST, "UNAUTHENTICATED"),
    AuthorizationError: (INVALID_REQUEST, "PERMISSION_DENIED"),
    DuplicateEntityError: (INVALID_REQUEST, "ALREADY_EXISTS"),
    BudgetExceededError: (INVALID_REQUEST, "RESOURCE_EXHAUSTED"),
    PlanError: (INVALID_REQUEST, "FAILED_PRECONDITION"),
    # A write that found no space: an internal error, whose reason names the cause.
    StorageFullError: (INTERNAL_ERROR, "RESOURCE_EXHAUSTED"),
}


def _lookup(table: Mapping[type[Exception], Any], exc: BaseException) -> Any:
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return None


def is_known(exc: BaseException) -> bool:
    """Whether the exception is an expected refusal rather than a bug."""
    return isinstance(exc, StructuredError)


def error_payload(exc: BaseException, dialect: str) -> dict[str, Any]:
    """The JSON-RPC ``error`` object for ``exc`` in ``dialect``.

    Unknown exceptions become -32603 without any detail: the traceback belongs on
    stderr, never on the wire.
    """
    if isinstance(exc, StructuredError):
        message, data = exc.message, exc.data
    else:
        message, data = "Internal error", {}
    if dialect == dialects.A2A_V1:
        code, reason = _lookup(A2A_ERROR_CODES, exc) or (INTERNAL_ERROR, "INTERNAL")
        return {"code": code, "message": message, "data": error_details(reason, data)}
    if dialect in dialects.STANDARD:
        code = (_lookup(A2A_ERROR_CODES, exc) or (INTERNAL_ERROR,))[0]
    else:
        code = _lookup(EXTENSION_ERROR_CODES, exc) or INTERNAL_ERROR
    payload: dict[str, Any] = {"code": code, "message": message}
    if data:
        payload["data"] = data
    return payload


def internal_error_payload(exc: BaseException, dialect: str, where: str | None = None) -> dict[str, Any]:
    """-32603 for a bug: the traceback goes to stderr under an id, and only the id
    goes to the client."""
    from cleveragents.ids import new_id

    error_id = new_id()
    storage = storage_error(exc)
    if isinstance(storage, StorageFullError):  # the machine's state, not a bug: one line, no traceback
        logger.warning("error %s in %s: %s", error_id, where or "a request", storage.message)
    else:
        logger.error("internal error %s in %s", error_id, where or "a request", exc_info=exc)
    payload = error_payload(storage or exc, dialect)
    if dialect == dialects.A2A_V1:
        payload["data"][0]["metadata"]["error_id"] = error_id
    else:
        payload["data"] = {**payload.get("data", {}), "error_id": error_id}
    return payload


def storage_error(exc: BaseException) -> StorageFullError | StorageIoError | None:
    """The error naming the cause when ``exc`` (or what caused it) is a write that ran
    out of space or an I/O failure of the state database; the data names the error,
    never a path."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        code = current.errno if isinstance(current, OSError) else None
        if code in _FULL_ERRNOS:
            name = errno.errorcode[code]
            return StorageFullError(f"{StorageFullError.default_message}: {os.strerror(code)}",
                                    {"reason": "storage_full", "errno": name})
        sqlite_code = (getattr(current, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code
        if sqlite_code == _SQLITE_FULL:
            return StorageFullError(f"{StorageFullError.default_message}: the state database or disk is full",
                                    {"reason": "storage_full", "sqlite_error": "SQLITE_FULL"})
        if sqlite_code == _SQLITE_IOERR:
            return StorageIoError(f"{StorageIoError.default_message}: disk I/O error",
                                  {"reason": "storage_io_error", "sqlite_error": "SQLITE_IOERR"})
        current = current.__cause__ or current.__context__
    return None


def error_details(reason: str, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The 1.0 ``error.data``: an ErrorInfo, plus a BadRequest for invalid params."""
    field_errors = data.get("errors") if reason == "INVALID_PARAMS" else None
    metadata = {
        key: value if isinstance(value, str) else _compact_json(value)
        for key, value in data.items()
        if key != "errors" or field_errors is None
    }
    details: list[dict[str, Any]] = [
        {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": ERROR_DOMAIN, "metadata": metadata}
    ]
    if field_errors:
        details.append(
            {
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [
                    {"field": ".".join(str(p) for p in err.get("loc", ())), "description": err.get("msg", "")}
                    for err in field_errors
                ],
            }
        )
    return details


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


__all__ = [
    "A2AError",
    "A2ANotAvailableError",
    "A2AOperationNotFoundError",
    "A2AVersionMismatchError",
    "A2A_ERROR_CODES",
    "AuthenticationError",
    "AuthorizationError",
    "BudgetExceededError",
    "BusinessRuleViolation",
    "ContentTypeNotSupportedError",
    "DomainError",
    "DuplicateEntityError",
    "EXTENSION_ERROR_CODES",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "InvalidAgentResponseError",
    "InvalidRequestError",
    "ParseError",
    "PlanError",
    "PushNotificationNotSupportedError",
    "ResourceNotFoundError",
    "StorageFullError",
    "StorageIoError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnreadableRecordError",
    "UnsupportedOperationError",
    "ValidationError",
    "error_payload",
]

# The earlier spelling of the prefix, kept so existing imports keep working.
A2aError = A2AError
A2aNotAvailableError = A2ANotAvailableError
A2aOperationNotFoundError = A2AOperationNotFoundError
A2aVersionMismatchError = A2AVersionMismatchError
