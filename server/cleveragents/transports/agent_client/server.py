"""The ACP agent: ACP's methods served by the services behind the A2A methods.

``session/new`` makes a CleverAgents session (``session.create``), ``session/prompt``
sends the prompt as an A2A message in the session's context and streams the task as
``session/update`` notifications, ``session/load`` replays the session's tasks. Every
call goes through the facade, as every other transport's does.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from cleveragents._version import __version__
from cleveragents.config import Settings
from cleveragents.ids import new_id
from cleveragents.transports.agent_client import commands, lifecycle, session_settings, sessions, updates
from cleveragents.transports.agent_client.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    AgentClientError,
    Connection,
)
from cleveragents.transports.runtime import ServiceRuntime, stopped_by_signal

logger = logging.getLogger("cleveragents.agent_client")

PROTOCOL_VERSION = 1  # ACP's major version, as the official SDKs speak it
EOF_GRACE_SECONDS = 5.0


class AgentClientServer:
    def __init__(self, connection: Connection, settings: Settings, *, workspace_fixed: bool = False,
                 container_options: dict[str, Any] | None = None, agent_name: str = "cleveragents"):
        self.connection = connection
        self.runtime = ServiceRuntime(settings=settings, container_options=container_options)
        self._workspace_fixed = workspace_fixed
        self._agent_name = agent_name
        self._initialized = False
        self.client_capabilities: dict[str, Any] = {}
        self.sessions = sessions.SessionTable()
        self.keeper = lifecycle.Keeper(self._call)
        self._requests: set[asyncio.Task[None]] = set()
        self._handlers = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/prompt": self.prompt,
        }
        from cleveragents.transports.agent_client.session_methods import SessionMethods

        self.session_methods = SessionMethods(self)
        self.session_settings = session_settings.SessionSettings(self)
        self._handlers.update(self.session_methods.handlers())
        self._handlers.update(self.session_settings.handlers())

    # -- the connection ------------------------------------------------------------
    async def serve(self) -> int:
        try:
            await self.connection.run(self._on_request, self._on_notification)
        finally:
            await self._close()
        return 0

    async def _on_request(self, msg_id: Any, method: str, params: Any) -> None:
        task = asyncio.ensure_future(self._answer(msg_id, method, params))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        try:
            handler = self._handlers.get(method)
            if handler is None:
                raise AgentClientError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})
            if method != "initialize" and not self._initialized:
                raise AgentClientError(INVALID_REQUEST, f"Invalid request: send initialize before {method}",
                                       {"method": method, "reason": "not_initialized"})
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise AgentClientError(INVALID_PARAMS, "Invalid params: params must be an object", {"method": method})
            self.connection.respond(msg_id, await handler(params))
        except AgentClientError as exc:
            self.connection.refuse(msg_id, exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.connection.refuse(msg_id, _refusal(exc, method))

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel" and isinstance(params, dict):
            self.cancel(params)
        elif not method.startswith("$/") and not method.startswith("_"):
            logger.info("ignored the notification %s", method)

    async def _close(self) -> None:
        """End of input: in-flight requests get a short grace, running turns are
        cancelled. A stop signal (the serving task cancelled) gives them none."""
        self.runtime.stopping()
        for turn in self.sessions.running():
            turn.cancel()
        if self._requests and not stopped_by_signal():
            await asyncio.wait(set(self._requests), timeout=EOF_GRACE_SECONDS)
        for task in list(self._requests):
            task.cancel()
        await self.sessions.close_all()
        await self.runtime.aclose()

    # -- methods -------------------------------------------------------------------
    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        version = params.get("protocolVersion")
        if type(version) is not int or version < 0:
            raise AgentClientError(INVALID_PARAMS, "Invalid params: protocolVersion must be a non-negative integer",
                                   {"field": "protocolVersion"})
        capabilities = params.get("clientCapabilities")
        self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self._initialized = True
        if self._workspace_fixed:
            self.runtime.start()  # the workspace is known: load the services now
        return {
            "protocolVersion": min(version, PROTOCOL_VERSION) if version >= 1 else PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": dict(updates.PROMPT_CAPABILITIES),
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {"list": {}, "close": {}, "resume": {}, "fork": {}, "delete": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": self._agent_name, "title": "CleverAgents", "version": __version__},
        }

    async def authenticate(self, params: dict[str, Any]) -> dict[str, Any]:
        raise AgentClientError(INVALID_PARAMS, "Invalid params: this agent offers no authentication methods",
                               {"methodId": params.get("methodId"), "available": []})

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = sessions.working_directory(params)
        names = sessions.mcp_server_names(params)
        await self._use_workspace(cwd)
        session_id = new_id()
        mcp = await self.session_methods.connect_mcp(params, cwd)
        try:
            await self._call("session.create", {"session_id": session_id, "metadata": {
                sessions.METADATA_KEY: {"cwd": str(cwd), "mode": sessions.DEFAULT_MODE, "mcpServers": names}}})
        except BaseException:
            if mcp is not None:
                await mcp.close()
            raise
        session = self.sessions.add(sessions.AgentSession(session_id, cwd, mcp_servers=names, mcp=mcp))
        self._announce_commands(session_id)
        return {"sessionId": session_id, **session_settings.session_state(session)}

    def _announce_commands(self, session_id: str) -> None:
        """The slash commands, sent right after the answer that makes the session known."""
        update = {"sessionId": session_id, "update": {"sessionUpdate": "available_commands_update",
                                                      "availableCommands": [dict(c) for c in commands.COMMANDS]}}
        asyncio.get_running_loop().call_soon(self.connection.notify, "session/update", update)

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """The session as it was kept, its turns replayed (``session_methods``)."""
        return await self.session_methods.open(params, replay=True)

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions.get(params.get("sessionId"))
        text = updates.prompt_text(params.get("prompt"))
        if session.turn is not None:
            raise AgentClientError(INVALID_REQUEST, "Invalid request: a prompt is running in this session; "
                                   "cancel it or wait for its answer", {"sessionId": session.session_id,
                                                                          "reason": "prompt_running"})
        stream = updates.TurnStream(session.session_id)
        session.cancel_requested = False
        command = commands.command_of(text)
        recorder = None
        if command is None:
            session.turn = asyncio.ensure_future(self._run_turn(session, text, stream))
        else:  # a command's updates are recorded, for session/load to replay
            recorder = lifecycle.TurnRecorder(self.connection, text)
            session.turn = asyncio.ensure_future(self._command_runner(recorder).run(session, *command))
        try:
            await asyncio.wait({session.turn})
        finally:
            turn, session.turn = session.turn, None
        await self.session_methods.after_turn(session, text, recorder)
        if turn.cancelled() or session.cancel_requested:
            return {"stopReason": "cancelled"}
        turn.result()  # raises what the turn raised
        if (reason := stream.stop_reason()) is None:
            raise AgentClientError(INTERNAL_ERROR, f"The turn failed: {stream.reason or 'no reason given'}",
                                   {"taskId": stream.task_id, "state": stream.state})
        return {"stopReason": reason}

    def _command_runner(self, connection: Any = None) -> commands.CommandRunner:
        settings = self.runtime.settings
        root = Path(settings.workspace if settings is not None and settings.workspace else Path.cwd()).resolve()
        from cleveragents.transports.agent_client.client_files import client_reads_files, client_writes_files
        from cleveragents.transports.agent_client.terminals import client_has_terminals

        capabilities = self.client_capabilities
        return commands.CommandRunner(connection or self.connection, self._call, root, client_writes_files(capabilities),
                                      client_has_terminals(capabilities), client_reads_files(capabilities))

    async def _run_turn(self, session: sessions.AgentSession, text: str, stream: updates.TurnStream) -> None:
        from cleveragents.a2a.facade import CallContext

        facade = self.runtime.ready or await self.runtime.facade()
        msg_id = f"agent-client-{new_id()}"
        from cleveragents.transports.agent_client.client_files import ClientFiles, client_reads_files

        # A client that reads files is the turn's file reader: its tools see unsaved buffers.
        reader = ClientFiles(self.connection, session.session_id) if client_reads_files(
            self.client_capabilities) else None
        context = CallContext(method="SendStreamingMessage", dialect="", request_id=msg_id, transport="stdio",
                              notify=lambda *_: None, cancel_ends_task=True, push=True, tools=session.mcp,
                              reader=reader)
        call = await facade.open({"jsonrpc": "2.0", "id": msg_id, "method": "SendStreamingMessage", "params": {
            "message": {"role": "ROLE_USER", "messageId": new_id(), "contextId": session.session_id,
                        "parts": [{"text": text}]}}}, context)
        if call.response is not None:  # refused, or answered at once
            response = call.final_response().to_wire()
            if "error" in response:
                raise _from_wire(response["error"])
            for update in stream.updates(response.get("result") or {}):
                self.connection.notify("session/update", update)
            return
        async for item in call:
            for update in stream.updates(item.payload):
                self.connection.notify("session/update", update)

    def cancel(self, params: dict[str, Any]) -> None:
        """``session/cancel`` (a notification): the running turn and its task end; its
        prompt answers ``cancelled``."""
        try:
            session = self.sessions.get(params.get("sessionId"))
        except AgentClientError:
            logger.info("session/cancel for a session this connection doesn't have")
            return
        if session.turn is not None and not session.turn.done():
            session.cancel_requested = True
            session.turn.cancel()

    # -- the services --------------------------------------------------------------
    async def _use_workspace(self, cwd: Path) -> None:
        """The first session's cwd is the workspace, unless ``--workspace`` named one; the
        services serve one workspace, so a later session must be in it."""
        settings = self.runtime.settings
        if not self.runtime.started and not self._workspace_fixed and settings is not None:
            self.runtime.settings = replace(settings, workspace=cwd)
        workspace = (self.runtime.settings.workspace if self.runtime.settings else None) or cwd
        resolved, root = cwd.resolve(), Path(workspace).resolve()
        if resolved != root and root not in resolved.parents:
            raise AgentClientError(INVALID_PARAMS, "Invalid params: this agent serves one workspace and cwd is "
                                   "outside it; start another agent process for that directory",
                                   {"field": "cwd", "cwd": str(cwd), "workspace": str(root)})
        self.runtime.start()

    async def _call(self, method: str, params: dict[str, Any], editor: Any = None, **fields: Any) -> dict[str, Any]:
        """A facade call; ``editor`` (an ``app.calls.Editor``) writes a plan's files;
        ``fields`` set more of the call's ``CallContext`` (``on_step``, ...)."""
        from cleveragents.a2a.facade import CallContext

        facade = self.runtime.ready or await self.runtime.facade()
        context = None if editor is None and not fields else CallContext(
            method=method, dialect="", transport="stdio", editor=editor, **fields)
        request = {"jsonrpc": "2.0", "id": 0, "method": method, "params": params}
        response = (await facade.respond(request, context)).to_wire()
        if "error" in response:
            raise _from_wire(response["error"])
        return response["result"]  # type: ignore[no-any-return]


def _from_wire(error: dict[str, Any]) -> AgentClientError:
    data = error.get("data")
    return AgentClientError(error.get("code", INTERNAL_ERROR), str(error.get("message", "")),
                            data if isinstance(data, dict) else None)


def _refusal(exc: Exception, method: str) -> AgentClientError:
    """A failure outside the facade: a known refusal as itself, a bug under an error id."""
    from cleveragents.a2a import dialects
    from cleveragents.a2a.errors import error_payload, internal_error_payload, is_known

    payload = (error_payload(exc, dialects.EXTENSION) if is_known(exc)
               else internal_error_payload(exc, dialects.EXTENSION, f"{method} (agent client transport)"))
    return _from_wire(payload)


async def serve(reader: Any, head: bytes, writer: Any, settings: Settings, *, max_message_size: int,
                workspace_fixed: bool, container_options: dict[str, Any] | None = None,
                agent_name: str = "cleveragents") -> int:
    """Serve ACP on stdio until end of input; ``head`` is what was read to tell the framing apart."""
    from cleveragents.transports import gc_policy
    from cleveragents.transports.agent_client.wire import LineReader

    connection = Connection(LineReader(reader, head, max_message_size), writer)
    server = AgentClientServer(connection, settings, workspace_fixed=workspace_fixed,
                               container_options=container_options, agent_name=agent_name)
    gc_policy.tune_for_serving()
    try:
        return await server.serve()
    finally:
        await writer.drain()
        writer.close()
