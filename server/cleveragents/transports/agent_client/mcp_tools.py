"""The MCP servers an ACP client gives a session (``mcpServers``), connected with the
official ``mcp`` SDK (the ``mcp`` extra) and offered to the session's actor as tools
named ``mcp.<server>.<tool>`` (``app.calls.CallerTools``).

Only stdio servers are connected (the kind every ACP agent takes; ``mcpCapabilities``
declares no other). Each server is a child process that lives as long as the session
is open in this connection: ``close`` ends it. What a server writes to its stderr is
relayed to ours (``child_stderr``), so a client that never reads our stderr can't
block it. Without the ``mcp`` package the servers are accepted and not connected, and
the log says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from cleveragents.transports.agent_client.wire import INVALID_PARAMS, AgentClientError
from cleveragents.transports.child_stderr import child_stderr

logger = logging.getLogger("cleveragents.agent_client")

START_TIMEOUT_SECONDS = 30.0  # to spawn a server, initialize it and list its tools
CALL_TIMEOUT_SECONDS = 300.0
MAX_RESULT_CHARS = 64_000
PREFIX = "mcp."


@dataclass(frozen=True, slots=True)
class StdioServer:
    name: str
    command: str
    args: tuple[str, ...]
    env: dict[str, str]


def stdio_servers(params: dict[str, Any]) -> list[StdioServer]:
    """The stdio servers of ``mcpServers`` (those with a ``command``; HTTP and SSE ones,
    which the agent does not declare, are left alone)."""
    servers: list[StdioServer] = []
    for index, spec in enumerate(params.get("mcpServers") or ()):
        if not isinstance(spec, dict) or "command" not in spec or spec.get("type") not in (None, "stdio"):
            continue
        command, args, env = spec.get("command"), spec.get("args", []), spec.get("env", [])
        if not isinstance(command, str) or not command or not isinstance(args, list) \
                or not all(isinstance(a, str) for a in args) or not isinstance(env, list) \
                or not all(isinstance(v, dict) and isinstance(v.get("name"), str) and isinstance(v.get("value"), str)
                           for v in env):
            raise AgentClientError(INVALID_PARAMS, "Invalid params: a stdio MCP server needs a command, args "
                                   "(strings) and env ({name, value} objects)", {"field": f"mcpServers[{index}]"})
        servers.append(StdioServer(spec["name"], command, tuple(args), {v["name"]: v["value"] for v in env}))
    return servers


def available() -> bool:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return True


class _Connected:
    """One server: a task that holds its process and client session open until told to stop."""

    def __init__(self, server: StdioServer, cwd: str):
        self.server = server
        self._cwd = cwd
        self.session: Any = None
        self.tools: list[Any] = []
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.ensure_future(self._hold())

    async def _hold(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        parameters = StdioServerParameters(command=self.server.command, args=list(self.server.args),
                                           env=self.server.env or None, cwd=self._cwd)
        errlog = None
        try:
            errlog = await child_stderr(f"mcp {self.server.name}")
            async with stdio_client(parameters, errlog) as (read, write), ClientSession(read, write) as session:
                errlog.close()  # the server has its copy: the relay ends when the server does
                await session.initialize()
                self.tools = list((await session.list_tools()).tools)
                self.session = session
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 (the opener reads it from the future)
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if not isinstance(exc, Exception):
                raise
            logger.warning("the MCP server %s ended: %r", self.server.name, exc)
        finally:
            self.session = None
            if errlog is not None:
                errlog.close()

    async def ready(self) -> None:
        await asyncio.wait_for(asyncio.shield(self._ready), START_TIMEOUT_SECONDS)

    async def close(self) -> None:
        self._stop.set()
        with suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(self._task, 10)


class McpTools:
    """A session's MCP servers, as ``app.calls.CallerTools``."""

    def __init__(self, servers: Sequence[_Connected]):
        self._servers = list(servers)
        self._by_name: dict[str, tuple[_Connected, str]] = {
            f"{PREFIX}{s.server.name}.{tool.name}": (s, tool.name) for s in self._servers for tool in s.tools}

    @classmethod
    async def connect(cls, servers: Sequence[StdioServer], cwd: str) -> McpTools | None:
        """The servers, each started and its tools listed; a server that fails to start
        is -32602 naming it (the others are stopped again)."""
        if not servers:
            return None
        if not available():
            logger.warning("MCP servers given (%s) are not connected: install the mcp extra",
                           ", ".join(s.name for s in servers))
            return None
        connected = [_Connected(server, cwd) for server in servers]
        for index, one in enumerate(connected):
            try:
                await one.ready()
            except Exception as exc:
                for other in connected:
                    await other.close()
                raise AgentClientError(INVALID_PARAMS, f"Invalid params: the MCP server {one.server.name} did not "
                                       f"start: {exc!r}", {"field": f"mcpServers[{index}]",
                                                           "name": one.server.name}) from None
        return cls(connected)

    def infos(self) -> Sequence[Mapping[str, Any]]:
        infos = []
        for name, (server, tool) in self._by_name.items():
            spec = next(t for t in server.tools if t.name == tool)
            infos.append({"name": name, "description": f"{spec.description or tool} (MCP server {server.server.name})",
                          "input_schema": dict(_field(spec, "input_schema", "inputSchema") or {"type": "object"})})
        return infos

    async def invoke(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        from cleveragents.a2a.errors import AuthorizationError

        server, tool = self._by_name.get(name, (None, ""))
        if server is None or server.session is None:
            raise AuthorizationError(f"{name} is not available to this actor here (its MCP server is not connected)",
                                     {"tool": name, "available": sorted(self._by_name)})
        result = await asyncio.wait_for(server.session.call_tool(tool, dict(arguments)), CALL_TIMEOUT_SECONDS)
        texts = "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")
        # What the actor reads: the text (cut to a few pages), whether the tool failed, and
        # the structured result when the server gives one that is small enough.
        output: dict[str, Any] = {"summary": texts[:MAX_RESULT_CHARS] + ("\u2026" if len(texts) > MAX_RESULT_CHARS
                                                                        else ""),
                                  "isError": bool(_field(result, "is_error", "isError"))}
        structured = _field(result, "structured_content", "structuredContent")
        if structured is not None and len(repr(structured)) <= MAX_RESULT_CHARS:
            output["structuredContent"] = structured
        return output

    async def close(self) -> None:
        for server in self._servers:
            await server.close()


def _field(model: Any, name: str, earlier_name: str) -> Any:
    """A field of an SDK model: mcp 2 names them in snake case, mcp 1 in camel case."""
    return getattr(model, name, None) if hasattr(model, name) else getattr(model, earlier_name, None)
