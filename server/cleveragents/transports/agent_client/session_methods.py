"""ACP's session lifecycle beyond ``session/new``: ``session/load`` and
``session/resume`` (the session as it was kept, with or without its turns replayed),
``session/list``, ``session/close`` and ``session/fork``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from cleveragents.ids import new_id
from cleveragents.transports.agent_client import lifecycle, session_settings, sessions
from cleveragents.transports.agent_client.wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    AgentClientError,
)

if TYPE_CHECKING:
    from cleveragents.transports.agent_client.server import AgentClientServer

logger = logging.getLogger("cleveragents.agent_client")

CLOSE_GRACE_SECONDS = 10.0  # a closed session's running turn gets this long to end once cancelled
MAX_FORK_DEPTH = 16  # a fork of a fork ...: how far back its replay reaches
_TASK_PAGE = 100
Handler = Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]


class SessionMethods:
    def __init__(self, server: AgentClientServer):
        self._server = server

    def handlers(self) -> dict[str, Handler]:
        return {"session/list": self.list_sessions, "session/close": self.close,
                "session/resume": self.resume, "session/fork": self.fork, "session/delete": self.delete}

    async def _record(self, session_id: str) -> dict[str, Any]:
        try:
            return await self._server._call("session.get", {"session_id": session_id})
        except AgentClientError as exc:
            if exc.code in (RESOURCE_NOT_FOUND, -32001, INVALID_PARAMS):
                raise AgentClientError(RESOURCE_NOT_FOUND, "Resource not found: no such session",
                                       {"sessionId": session_id}) from None
            raise

    async def open(self, params: dict[str, Any], *, replay: bool) -> dict[str, Any]:
        """``session/load`` (``replay``) and ``session/resume``: the session with the
        mode, "always" answers and command turns it kept."""
        session_id = sessions.require_str(params, "sessionId")
        cwd = sessions.working_directory(params)
        names = sessions.mcp_server_names(params)
        await self._server._use_workspace(cwd)
        record = await self._record(session_id)
        if (open_now := self._server.sessions.find(session_id)) is not None and open_now.turn is not None:
            raise AgentClientError(INVALID_REQUEST, "Invalid request: a prompt is running in this session; "
                                   "cancel it or wait for its answer", {"sessionId": session_id,
                                                                          "reason": "prompt_running"})
        session = lifecycle.restore(session_id, cwd, record.get("metadata") or {})
        session.mcp_servers = names
        session.mcp = await self.connect_mcp(params, cwd)
        self._server.sessions.add(session)
        if replay:
            for update in lifecycle.replay(session_id, await self.turns_of(session), session.command_turns):
                self._server.connection.notify("session/update", update)
        self._server._announce_commands(session_id)
        return session_settings.session_state(session)

    async def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self.open(params, replay=False)

    async def turns_of(self, session: sessions.AgentSession) -> list[dict[str, Any]]:
        """The session's tasks, oldest first; a fork's begin with those its parents had
        when it was made."""
        tasks = await self._tasks(session.session_id)
        forked, depth = session.forked_from, 0
        while forked and isinstance(forked.get("sessionId"), str) and depth < MAX_FORK_DEPTH:
            before = str(forked.get("before", ""))
            tasks = [t for t in await self._tasks(forked["sessionId"]) if str(t.get("id", "")) < before] + tasks
            try:
                parent = await self._record(forked["sessionId"])
            except AgentClientError:
                break
            kept = (parent.get("metadata") or {}).get(sessions.METADATA_KEY) or {}
            forked, depth = kept.get("forkedFrom") if isinstance(kept, dict) else None, depth + 1
        return tasks

    async def _tasks(self, session_id: str) -> list[dict[str, Any]]:
        tasks: list[dict[str, Any]] = []
        page: dict[str, Any] = {"contextId": session_id, "pageSize": _TASK_PAGE}
        while True:
            result = await self._server._call("ListTasks", page)
            tasks += result.get("tasks") or []
            if not (token := result.get("nextPageToken")):
                return tasks[::-1]
            page = {**page, "pageToken": token}

    async def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd, cursor = lifecycle.list_filter(params)
        if cwd is not None:
            try:  # before any session, the cwd asked about is the workspace, as session/new's would be
                await self._server._use_workspace(cwd)
            except AgentClientError:
                return {"sessions": []}  # outside the workspace served: none of its sessions are here
        return await lifecycle.list_page(self._server._call, cwd, cursor)

    async def close(self, params: dict[str, Any]) -> dict[str, Any]:
        """Ends the session's running turn (as ``session/cancel`` does) and forgets it in
        this connection. The session stays in the store: ``session/list`` lists it and
        ``session/load`` opens it again."""
        session_id = sessions.require_str(params, "sessionId")
        if self._server.sessions.find(session_id) is None:
            await self._record(session_id)  # unknown: -32002; known but not open here: nothing to free
            return {}
        await self._forget(session_id)
        return {}

    async def delete(self, params: dict[str, Any]) -> dict[str, Any]:
        """Closes the session here (as ``session/close``), then deletes it from the store
        with its conversation (its A2A tasks) and its command turns (its metadata):
        ``session/load`` of it is then -32002."""
        session_id = sessions.require_str(params, "sessionId")
        await self._record(session_id)  # unknown: -32002
        await self._forget(session_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_GRACE_SECONDS
        while True:
            try:
                await self._server._call("session.delete", {"session_id": session_id})
                return {}
            except AgentClientError as exc:
                if exc.code in (RESOURCE_NOT_FOUND, -32001):  # deleted meanwhile, by another process
                    raise AgentClientError(RESOURCE_NOT_FOUND, "Resource not found: no such session",
                                           {"sessionId": session_id}) from None
                if "running" not in (exc.data or {}) or loop.time() > deadline:
                    raise
            await asyncio.sleep(0.05)  # the cancelled turn's task is still ending

    async def _forget(self, session_id: str) -> None:
        """The session is no longer open in this connection: its turn ends, its MCP
        servers stop."""
        session = self._server.sessions.find(session_id)
        if session is None:
            return
        if session.turn is not None and not session.turn.done():
            session.cancel_requested = True
            session.turn.cancel()
            await asyncio.wait({session.turn}, timeout=CLOSE_GRACE_SECONDS)
        self._server.sessions.remove(session_id)
        if session.mcp is not None:
            await session.mcp.close()

    async def fork(self, params: dict[str, Any]) -> dict[str, Any]:
        """A new session that starts where the given one is: its mode, "always" answers,
        title and turns (replayed when the fork is loaded), its actor, its budget and its
        conversation (the actor's history goes on from the parent's, up to the fork)."""
        parent_id = sessions.require_str(params, "sessionId")
        cwd = sessions.working_directory(params)
        names = sessions.mcp_server_names(params)
        await self._server._use_workspace(cwd)
        record = await self._record(parent_id)
        metadata = record.get("metadata") or {}
        parent = lifecycle.restore(parent_id, cwd, metadata)
        before = new_id()  # the parent's turns up to now are the fork's too
        fork = sessions.AgentSession(new_id(), cwd, parent.mode, always=dict(parent.always), mcp_servers=names,
                                     title=parent.title, command_turns=list(parent.command_turns),
                                     forked_from={"sessionId": parent_id, "before": before})
        create: dict[str, Any] = {"session_id": fork.session_id, "actor_name": record.get("actor_name"),
                                  "metadata": {sessions.METADATA_KEY: lifecycle.state(fork),
                                               lifecycle.TURNS_KEY: fork.command_turns,
                                               # the core's fork link: the actor's history goes on from the parent's
                                               "forked_from": {"session_id": parent_id, "before": before}}}
        if isinstance(metadata.get("budget"), dict):
            create["budget"] = metadata["budget"]
        fork.mcp = await self.connect_mcp(params, cwd)  # before the fork is stored: a refusal leaves nothing
        try:
            await self._server._call("session.create", create)
        except BaseException:
            if fork.mcp is not None:
                await fork.mcp.close()
            raise
        self._server.sessions.add(fork)
        self._server._announce_commands(fork.session_id)
        return {"sessionId": fork.session_id, **session_settings.session_state(fork)}

    async def connect_mcp(self, params: dict[str, Any], cwd: Any) -> Any:
        """The stdio MCP servers of ``params``, connected for the session's actor."""
        from cleveragents.transports.agent_client import mcp_tools

        return await mcp_tools.McpTools.connect(mcp_tools.stdio_servers(params), str(cwd))

    async def after_turn(self, session: sessions.AgentSession, prompt: str,
                         recorder: lifecycle.TurnRecorder | None) -> None:
        """Keeps what the turn changed: a command turn (for ``session/load``), the
        "always" answers given in it, the title the first prompt gives; the write is the
        session's last activity (``updatedAt`` in ``session/list``)."""
        if session.title is None:
            session.title = lifecycle.title_of(prompt)
        try:
            if recorder is not None:
                await self._server.keeper.add_turn(session, recorder.turn)
            else:
                await self._server.keeper.save_state(session)
        except AgentClientError as exc:  # the turn's answer still goes out; the log says what was not kept
            logger.warning("could not keep the turn of session %s: %s", session.session_id, exc.message)
