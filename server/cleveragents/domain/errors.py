"""Domain errors: what a rule of the domain says when it refuses.

They carry a message and structured ``data``; the protocol boundary maps each class to
a JSON-RPC error code (``cleveragents.a2a.errors``). Nothing here knows about codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StructuredError(Exception):
    """An expected refusal: a message for people and ``data`` for programs. The
    protocol's errors (``cleveragents.a2a.errors``) share this base."""

    default_message = "Error"

    def __init__(self, message: str | None = None, data: Mapping[str, Any] | None = None):
        self.message = message or self.default_message
        self.data: dict[str, Any] = dict(data or {})
        super().__init__(self.message)


class DomainError(StructuredError):
    """Base of every domain error."""

    default_message = "Domain rule violated"


class ResourceNotFoundError(DomainError):
    default_message = "Entity not found"


class ValidationError(DomainError):
    default_message = "Invalid params"

    @classmethod
    def for_field(cls, loc: list[Any] | tuple[Any, ...], msg: str, kind: str = "value_error",
                  message: str | None = None, **extra: Any) -> ValidationError:
        """The error for one bad field, in the shape the facade gives pydantic's errors."""
        return cls(message or cls.default_message, {"errors": [{"loc": list(loc), "msg": msg, "type": kind, **extra}]})


class AuthenticationError(DomainError):
    default_message = "Authentication required"


class AuthorizationError(DomainError):
    default_message = "Forbidden"


class BusinessRuleViolation(DomainError):
    default_message = "Invalid state"


class DuplicateEntityError(DomainError):
    default_message = "Already exists"


class BudgetExceededError(DomainError):
    default_message = "Budget exceeded"


class PlanError(DomainError):
    default_message = "Plan error"


class TaskNotFoundError(ResourceNotFoundError):
    default_message = "Task not found"


class UnreadableRecordError(ResourceNotFoundError):
    """A stored record can't be served (it isn't JSON, doesn't decode, or nests too deep).

    Lists skip such a record; read alone, it is this error, naming the store, the id and why."""

    default_message = "Stored record can't be read"

    def __init__(self, store: str, record_id: str, reason: str):
        super().__init__(f"{store} record {record_id} can't be read: {reason}",
                         {"store": store, "id": record_id, "reason": reason})


class TaskNotCancelableError(BusinessRuleViolation):
    default_message = "Task not cancelable"


def failure_reason(exc: BaseException) -> str:
    """``"Type: message"`` for a client, as a failed task's reason. An OS error's file
    names are left out: they are the server's paths (the log has them, with the traceback)."""
    if isinstance(exc, OSError) and (exc.filename is not None or exc.filename2 is not None):
        return f"{type(exc).__name__}: {exc.strerror or 'operating system error'}"
    return f"{type(exc).__name__}: {exc}"
