"""CleverAgents: an A2A backend that editors start like a language server.

The publishing API (``Agent``, ``AgentTeam``, ``Task``, ``A2A``, ``AgentExtension``,
``AgentProvider``, ``OAuth2``, ``tool``, ``AgentReply`` (what ``Agent.start``
answers), and the parts and artifacts a handler answers with; for handlers
``InputRequired``, ``Message``, ``ReplyAs``, ``TaskRejected``; for a handler's annotations ``Turn``
and ``CallerIdentity``, who is calling) loads on first use, so
``import cleveragents`` stays cheap. ``A2AClient`` (the outbound client,
``cleveragents.a2a.client.A2AClient``) loads only when named, so a server that never
calls out never imports it; httpx loads at its first request.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cleveragents._version import __version__

if TYPE_CHECKING:
    from cleveragents.a2a.client import A2AClient
    from cleveragents.domain.actor import Turn
    from cleveragents.domain.caller import CallerIdentity
    from cleveragents.publish import (
        A2A,
        A2UI_MIME_TYPE,
        Agent,
        AgentExtension,
        AgentProvider,
        AgentReply,
        AgentTeam,
        Artifact,
        DataPart,
        FilePart,
        InputRequired,
        Message,
        OAuth2,
        ReplyAs,
        Task,
        TaskRejected,
        TeamTask,
        TextPart,
        create_a2ui_part,
        is_a2ui_part,
        tool,
    )

_PUBLISHED = frozenset({"A2A", "Agent", "AgentExtension", "AgentProvider", "AgentReply", "AgentTeam",
                        "InputRequired", "Message", "ReplyAs", "Task", "TaskRejected", "TeamTask", "tool",
                        "TextPart", "FilePart", "DataPart", "Artifact", "create_a2ui_part", "is_a2ui_part",
                        "A2UI_MIME_TYPE", "OAuth2"})

# What a handler reads: the turn, and who sent its message.
_HANDLER_TYPES = {"Turn": "cleveragents.domain.actor", "CallerIdentity": "cleveragents.domain.caller"}

__all__ = ["A2A", "A2AClient", "A2UI_MIME_TYPE", "Agent", "AgentExtension", "AgentProvider", "AgentReply",
           "AgentTeam", "Artifact", "CallerIdentity", "DataPart", "FilePart", "InputRequired", "Message", "OAuth2",
           "ReplyAs", "Task", "TaskRejected", "TeamTask", "TextPart", "Turn", "__version__", "create_a2ui_part",
           "is_a2ui_part", "tool"]


def __getattr__(name: str) -> Any:
    if name == "A2AClient":
        value = importlib.import_module("cleveragents.a2a.client").A2AClient
    elif name in _PUBLISHED:
        value = getattr(importlib.import_module("cleveragents.publish"), name)
    elif name in _HANDLER_TYPES:
        value = getattr(importlib.import_module(_HANDLER_TYPES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLISHED, *_HANDLER_TYPES, "A2AClient"})
