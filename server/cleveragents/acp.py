"""Deprecated: ``cleveragents.acp`` was renamed to ``cleveragents.a2a`` (seed 001)."""

from __future__ import annotations

import warnings
from typing import Any

warnings.warn(
    "cleveragents.acp is deprecated; import from cleveragents.a2a", DeprecationWarning, stacklevel=2
)

_RENAMES = {
    "AcpRequest": "A2aRequest",
    "AcpResponse": "A2aResponse",
    "AcpErrorDetail": "A2aErrorDetail",
    "AcpEvent": "A2aEvent",
    "AcpLocalFacade": "A2aLocalFacade",
    "AcpError": "A2aError",
    "AcpEventQueue": "A2aEventQueue",
    "AcpNotAvailableError": "A2aNotAvailableError",
    "AcpOperationNotFoundError": "A2aOperationNotFoundError",
    "AcpVersionMismatchError": "A2aVersionMismatchError",
    "AcpVersionNegotiator": "A2aVersionNegotiator",
}

__all__ = sorted(_RENAMES)


def __getattr__(name: str) -> Any:
    target = _RENAMES.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import cleveragents.a2a as a2a

    return getattr(a2a, target)
