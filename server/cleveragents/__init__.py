"""CleverAgents: an A2A backend that editors start like a language server.

The publishing API (``Agent``, ``AgentTeam``, ``Task``, ``A2A``, ``tool``) loads on
first use, so ``import cleveragents`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cleveragents._version import __version__

if TYPE_CHECKING:
    from cleveragents.publish import (
        A2A,
        Agent,
        AgentTeam,
        InputRequired,
        Task,
        TeamTask,
        tool,
    )

_PUBLISHED = frozenset({"A2A", "Agent", "AgentTeam", "InputRequired", "Task", "TeamTask", "tool"})

__all__ = ["A2A", "Agent", "AgentTeam", "InputRequired", "Task", "TeamTask", "__version__", "tool"]


def __getattr__(name: str) -> Any:
    if name not in _PUBLISHED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("cleveragents.publish"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLISHED})
