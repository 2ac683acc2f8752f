"""Deprecated: ``cleveragents.acp`` was renamed to ``cleveragents.a2a``."""

from __future__ import annotations

import warnings

import cleveragents.a2a as _a2a

warnings.warn(
    "cleveragents.acp is deprecated; import from cleveragents.a2a", DeprecationWarning, stacklevel=2
)

_RENAMES = {
    "AcpRequest": "A2ARequest",
    "AcpResponse": "A2AResponse",
    "AcpErrorDetail": "A2AErrorDetail",
    "AcpEvent": "A2AEvent",
    "AcpLocalFacade": "A2ALocalFacade",
    "AcpError": "A2AError",
    "AcpEventQueue": "A2AEventQueue",
    "AcpNotAvailableError": "A2ANotAvailableError",
    "AcpOperationNotFoundError": "A2AOperationNotFoundError",
    "AcpVersionMismatchError": "A2AVersionMismatchError",
    "AcpVersionNegotiator": "A2AVersionNegotiator",
}
globals().update({old: getattr(_a2a, new) for old, new in _RENAMES.items()})

__all__ = sorted(_RENAMES)
