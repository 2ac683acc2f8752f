"""The sessions of one ACP connection: each is a CleverAgents session, its turns A2A
tasks in the session's context (so the A2A methods see them too)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleveragents.transports.agent_client.wire import INVALID_PARAMS, AgentClientError

# ACP session modes are the automation profiles: how much a plan waits for the user.
MODES = (
    {"id": "manual", "name": "Manual", "description": "Ask before a plan executes and before it is applied"},
    {"id": "supervised", "name": "Supervised", "description": "Execute plans; ask before applying their changes"},
    {"id": "autonomous", "name": "Autonomous", "description": "Execute and apply plans without asking"},
)
MODE_IDS = tuple(mode["id"] for mode in MODES)
DEFAULT_MODE = "supervised"
METADATA_KEY = "agent_client"  # where the session record keeps what ACP gave at its start
MAX_SESSIONS = 1024  # open in one connection; the oldest idle one is forgotten past it


@dataclass
class AgentSession:
    session_id: str
    cwd: Path
    mode: str = DEFAULT_MODE
    turn: asyncio.Task[Any] | None = None  # the running prompt's stream
    cancel_requested: bool = False
    # "Always" answers to permission requests, by kind of step: True allows, False rejects.
    always: dict[str, bool] = field(default_factory=dict)
    # Kept with the session (``lifecycle``): what survives a restart.
    mcp_servers: list[str] = field(default_factory=list)
    title: str | None = None
    forked_from: dict[str, Any] | None = None  # {"sessionId", "before"}: the parent's turns up to the fork
    command_turns: list[dict[str, Any]] = field(default_factory=list)
    saving: asyncio.Lock = field(default_factory=asyncio.Lock)
    mcp: Any = None  # the client's MCP servers, connected (``mcp_tools.McpTools``), while open here

    def mode_state(self) -> dict[str, Any]:
        return {"currentModeId": self.mode, "availableModes": [dict(mode) for mode in MODES]}


class SessionTable:
    """The sessions this connection opened or loaded, bounded."""

    def __init__(self) -> None:
        self._sessions: dict[str, AgentSession] = {}

    def add(self, session: AgentSession) -> AgentSession:
        if (before := self._sessions.pop(session.session_id, None)) is not None and before.mcp is not session.mcp:
            _release(before)
        self._sessions[session.session_id] = session
        while len(self._sessions) > MAX_SESSIONS:
            idle = next((sid for sid, s in self._sessions.items() if s.turn is None), None)
            if idle is None:
                break
            _release(self._sessions.pop(idle))
        return session

    def get(self, session_id: Any) -> AgentSession:
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise AgentClientError(INVALID_PARAMS, "Invalid params: no such session in this connection; "
                                   "create it with session/new or load it with session/load",
                                   {"field": "sessionId", "sessionId": session_id})
        return session

    def find(self, session_id: Any) -> AgentSession | None:
        return self._sessions.get(session_id) if isinstance(session_id, str) else None

    def remove(self, session_id: str) -> AgentSession | None:
        return self._sessions.pop(session_id, None)

    async def close_all(self) -> None:
        """Ends every session's MCP servers (the connection is over)."""
        for session in list(self._sessions.values()):
            if session.mcp is not None:
                await session.mcp.close()

    def running(self) -> list[asyncio.Task[Any]]:
        return [s.turn for s in self._sessions.values() if s.turn is not None]


def _release(session: AgentSession) -> None:
    """A session this connection no longer holds: its MCP servers end."""
    if session.mcp is not None:
        asyncio.ensure_future(session.mcp.close())


def require_str(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise AgentClientError(INVALID_PARAMS, f"Invalid params: {name} must be a non-empty string", {"field": name})
    return value


def working_directory(params: dict[str, Any]) -> Path:
    """``cwd``: an absolute path to a directory, as ACP requires."""
    path = Path(require_str(params, "cwd"))
    if not path.is_absolute():
        raise AgentClientError(INVALID_PARAMS, "Invalid params: cwd must be an absolute path",
                               {"field": "cwd", "cwd": str(path)})
    if not path.is_dir():
        raise AgentClientError(INVALID_PARAMS, "Invalid params: cwd is not a directory",
                               {"field": "cwd", "cwd": str(path)})
    return path


def mcp_server_names(params: dict[str, Any]) -> list[str]:
    """The names of the MCP servers the client offers (a list of objects, each with a
    ``name``). Only names are kept: their settings may hold secrets."""
    servers = params.get("mcpServers", [])
    if not isinstance(servers, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str)
                                                for s in servers):
        raise AgentClientError(INVALID_PARAMS, "Invalid params: mcpServers must be a list of objects with a name",
                               {"field": "mcpServers"})
    return [server["name"] for server in servers]


def requested_mode(params: dict[str, Any]) -> str:
    mode = params.get("modeId")
    if mode not in MODE_IDS:
        raise AgentClientError(INVALID_PARAMS, "Invalid params: unknown mode", {
            "field": "modeId", "modeId": mode, "available": list(MODE_IDS)})
    return str(mode)
