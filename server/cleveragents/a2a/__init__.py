"""The A2A protocol boundary. Names load on first use, so importing the package is cheap."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "A2aLocalFacade": "facade",
    "PendingResponse": "facade",
    "CallContext": "facade",
    "A2aRequest": "models",
    "A2aResponse": "models",
    "A2aErrorDetail": "models",
    "A2aEvent": "models",
    "A2aEventQueue": "events",
    "EventBusBridge": "events",
    "TASK_STATUS_UPDATE": "events",
    "TASK_ARTIFACT_UPDATE": "events",
    "A2aVersionNegotiator": "version",
    "A2aError": "errors",
    "A2aNotAvailableError": "errors",
    "A2aOperationNotFoundError": "errors",
    "A2aVersionMismatchError": "errors",
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
