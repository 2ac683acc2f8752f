"""The ``google.rpc`` status of an A2A 1.0 error, by its ``ErrorInfo`` reason.

A 1.0 error carries an ``ErrorInfo`` whose reason names it (``errors.py``). The
HTTP+JSON binding answers it as a ``google.rpc.Status`` with an HTTP status, and the
gRPC binding as a gRPC status: both read the code from this one table, which follows
the A2A specification's error mapping (a reason it does not list is a failed
precondition). Light: no protobuf or gRPC import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# ErrorInfo reason -> (HTTP status, google.rpc.Code name).
STATUS_BY_REASON: dict[str, tuple[int, str]] = {
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
    "EXTENSION_SUPPORT_REQUIRED": (400, "FAILED_PRECONDITION"),
    "INTERNAL": (500, "INTERNAL"),
}
# TASK_NOT_CANCELABLE, PUSH_NOTIFICATION_NOT_SUPPORTED, UNSUPPORTED_OPERATION,
# EXTENDED_AGENT_CARD_NOT_CONFIGURED, VERSION_NOT_SUPPORTED and any other reason.
PRECONDITION = (400, "FAILED_PRECONDITION")
STORAGE_FULL_HTTP = 507  # Insufficient Storage: a full disk, not a rate limit to retry after


def error_info(error: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ErrorInfo`` among a 1.0 JSON-RPC error's details (``{}`` when none)."""
    details = error.get("data")
    if not isinstance(details, list):
        return {}
    return next((d for d in details if isinstance(d, dict) and "reason" in d), {})


def status_of(error: Mapping[str, Any]) -> tuple[int, str]:
    """(HTTP status, google.rpc.Code name) of a 1.0 JSON-RPC error object."""
    info = error_info(error)
    http_status, code = STATUS_BY_REASON.get(info.get("reason", "INTERNAL"), PRECONDITION)
    if (info.get("metadata") or {}).get("reason") == "storage_full":
        http_status = STORAGE_FULL_HTTP
    return http_status, code
