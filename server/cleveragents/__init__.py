"""CleverAgents: an A2A backend that editors start like a language server.

The publishing API (``Agent``, ``AgentTeam``, ``Task``, ``A2A``, ``AgentExtension``,
``OAuth2``, ``tool``) loads on first use, so ``import cleveragents`` stays cheap. ``A2AClient`` (the
outbound client, ``cleveragents.a2a.client.A2AClient``) loads only when named, so
a server that never calls out never imports it; httpx loads at its first request.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cleveragents._version import __version__

if TYPE_CHECKING:
    from cleveragents.a2a.client import A2AClient
    from cleveragents.publish import (
        A2A,
        Agent,
        AgentExtension,
        AgentTeam,
        InputRequired,
        Message,
        OAuth2,
        Task,
        TeamTask,
        tool,
    )

_PUBLISHED = frozenset({"A2A", "Agent", "AgentExtension", "AgentTeam", "InputRequired", "Message", "Task", "TeamTask",
                        "tool", "OAuth2"})

__all__ = ["A2A", "A2AClient", "Agent", "AgentExtension", "AgentTeam", "InputRequired", "Message", "Task",
           "TeamTask", "__version__", "tool", "OAuth2"]


def __getattr__(name: str) -> Any:
    if name == "A2AClient":
        value = importlib.import_module("cleveragents.a2a.client").A2AClient
    elif name in _PUBLISHED:
        value = getattr(importlib.import_module("cleveragents.publish"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLISHED, "A2AClient"})
