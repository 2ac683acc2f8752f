"""Deprecated: ``cleveragents.acp`` was renamed to ``cleveragents.a2a``."""

from __future__ import annotations

import warnings

import cleveragents.a2a as _a2a

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
globals().update({old: getattr(_a2a, new) for old, new in _RENAMES.items()})

__all__ = sorted(_RENAMES)
