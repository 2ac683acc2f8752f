"""The A2A protocol boundary. Names load on first use, so importing the package is cheap."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "A2ALocalFacade": "facade",
    "PendingResponse": "facade",
    "CallContext": "facade",
    "A2ARequest": "models",
    "A2AResponse": "models",
    "A2AErrorDetail": "models",
    "A2AEvent": "models",
    "A2AEventQueue": "events",
    "EventBusBridge": "events",
    "TASK_STATUS_UPDATE": "events",
    "TASK_ARTIFACT_UPDATE": "events",
    "A2AVersionNegotiator": "version",
    "A2AError": "errors",
    "A2ANotAvailableError": "errors",
    "A2AOperationNotFoundError": "errors",
    "A2AVersionMismatchError": "errors",
    "ResourceNotFoundError": "errors",
    "ValidationError": "errors",
    "AuthenticationError": "errors",
    "AuthorizationError": "errors",
    "BusinessRuleViolation": "errors",
    "DuplicateEntityError": "errors",
    "BudgetExceededError": "errors",
    "PlanError": "errors",
    "ServerConnectionConfig": "client",
    "ServerClient": "client",
    "RemoteExecutionClient": "client",
    "AuthClient": "client",
    "StubServerClient": "client",
    "StubRemoteExecutionClient": "client",
    "StubAuthClient": "client",
}

# The earlier spelling of the prefix, kept so existing imports keep working.
_EXPORTS.update({name.replace("A2A", "A2a", 1): _EXPORTS[name] for name in (
    "A2ALocalFacade", "A2ARequest", "A2AResponse", "A2AErrorDetail", "A2AEvent", "A2AEventQueue",
    "A2AVersionNegotiator", "A2AError", "A2ANotAvailableError", "A2AOperationNotFoundError",
    "A2AVersionMismatchError")})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
