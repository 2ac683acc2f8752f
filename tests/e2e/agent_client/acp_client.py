"""The official Python ACP client (PyPI ``agent-client-protocol``) driving a real
``cleveragents-lsp`` process, with every message the agent sends checked against the
SDK's schema models."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, schema, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent

from tests.conftest import SERVER_COMMAND

REPO = Path(__file__).resolve().parents[3]

# What the agent may send, by method (its requests and notifications) ...
CALLS = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
    "fs/read_text_file": schema.ReadTextFileRequest,
    "fs/write_text_file": schema.WriteTextFileRequest,
    "terminal/create": schema.CreateTerminalRequest,
    "terminal/output": schema.TerminalOutputRequest,
    "terminal/wait_for_exit": schema.WaitForTerminalExitRequest,
    "terminal/release": schema.ReleaseTerminalRequest,
    "terminal/kill": schema.KillTerminalRequest,
}
# ... and its results, by the method of the client's request.
RESULTS = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/close": schema.CloseSessionResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/fork": schema.ForkSessionResponse,
    "session/delete": schema.DeleteSessionResponse,
}


def check(model: type[schema.BaseModel], payload: Any) -> None:
    """``payload`` is valid for ``model`` and holds nothing the model doesn't name
    (its dump, with only what was set, is the payload itself)."""
    parsed = model.model_validate(payload)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == payload, (model.__name__, payload)


class Recorder:
    """A client: records updates, answers permission requests from ``answers``."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.sent: dict[Any, str] = {}  # the client's request ids -> methods
        self.checked = 0
        self.invalid: list[str] = []  # messages that failed the check (the SDK would swallow the exception)
        self.permission_answers: list[str] = []
        self.permission_requests: list[schema.RequestPermissionRequest] = []
        self.writes: list[tuple[str, str]] = []  # fs/write_text_file calls: (path, content)
        self.refuse_writes = False
        self.buffers: dict[str, str] = {}  # unsaved editor buffers by path: fs/read_text_file answers them
        self.reads: list[str] = []  # fs/read_text_file calls: their paths
        self.terminals: dict[str, dict[str, Any]] = {}  # terminal/create calls by id, with what they printed
        self.released: list[str] = []
        self.before_permission: Any = None  # called before a permission request is answered

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        """As an editor that saves at once: the file on disk gets the content."""
        self.writes.append((path, content))
        if self.refuse_writes:
            raise RequestError(-32603, "the buffer is read-only")
        with open(path, "w", encoding="utf-8", newline="") as file:
            file.write(content)
        return schema.WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> Any:
        """As an editor: an open buffer's text, else the file on disk."""
        self.reads.append(path)
        if path in self.buffers:
            content = self.buffers[path]
        else:
            try:
                with open(path, encoding="utf-8", newline="") as file:
                    content = file.read()
            except OSError as exc:
                raise RequestError(-32002, f"Resource not found: {exc.strerror}", {"uri": path}) from None
        if line is not None or limit is not None:
            lines = content.splitlines(keepends=True)[(line or 1) - 1:]
            content = "".join(lines[:limit] if limit is not None else lines)
        return schema.ReadTextFileResponse(content=content)

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None, env: Any = None,
                              cwd: str | None = None, output_byte_limit: int | None = None, **kwargs: Any) -> Any:
        """As an editor: runs the command and keeps what it prints."""
        process = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.STDOUT)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = {"command": command, "args": args or [], "cwd": cwd, "process": process,
                                       "output": None}
        return schema.CreateTerminalResponse(terminal_id=terminal_id)

    async def _finished(self, terminal_id: str) -> dict[str, Any]:
        terminal = self.terminals[terminal_id]
        if terminal["output"] is None:
            out, _ = await terminal["process"].communicate()
            terminal["output"] = out.decode()
        return terminal

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = await self._finished(terminal_id)
        return schema.TerminalOutputResponse(output=terminal["output"], truncated=False, exit_status=schema.TerminalExitStatus(
            exit_code=terminal["process"].returncode))

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = await self._finished(terminal_id)
        return schema.WaitForTerminalExitResponse(exit_code=terminal["process"].returncode)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self._finished(terminal_id)
        self.released.append(terminal_id)
        return schema.ReleaseTerminalResponse()

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminals[terminal_id]["process"].kill()
        return schema.KillTerminalResponse()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permission_requests.append(schema.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=options))
        if self.before_permission is not None:
            self.before_permission()
        kind = self.permission_answers.pop(0) if self.permission_answers else "reject_once"
        option = next(o for o in options if o.kind == kind)
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected",
                                                                             option_id=option.option_id))

    def observe(self, event: StreamEvent) -> None:
        try:
            self._check(event)
        except Exception as exc:
            self.invalid.append(f"{event.message}: {exc!r}")

    def _check(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self.sent[message["id"]] = message["method"]
            return
        if "method" in message:
            check(CALLS[message["method"]], message.get("params"))
        elif "result" in message:
            check(RESULTS[self.sent[message["id"]]], message["result"])
        else:
            error = message["error"]
            assert isinstance(error["code"], int) and isinstance(error["message"], str), message
        self.checked += 1

    def texts(self, kind: str = "agent_message_chunk", session_id: str | None = None) -> list[str]:
        return [u.content.text for sid, u in self.updates
                if u.session_update == kind and (session_id is None or sid == session_id)]


@asynccontextmanager
async def agent(workspace: Path, *args: str, capabilities: Any = None) -> AsyncIterator[tuple[Any, Recorder]]:
    """An initialized connection to a fresh ``cleveragents-lsp`` serving ``workspace``;
    ``capabilities`` are the client's (``schema.ClientCapabilities``). The SDK pipes the
    server's stderr and never reads it; it is read here only once the test is done, or
    the SDK's wait for the exit would never see the pipe end once it had filled."""
    recorder = Recorder()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    async with spawn_agent_process(recorder, sys.executable, *SERVER_COMMAND[1:], *args, cwd=workspace, env=env,
                                   observers=[recorder.observe]) as (conn, process):
        answer = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION,
                                                        client_capabilities=capabilities), 30)
        assert answer.protocol_version == PROTOCOL_VERSION
        yield conn, recorder
        assert process.stderr is not None
        drained = asyncio.ensure_future(process.stderr.read())
        await conn.close()
    await asyncio.wait_for(drained, 30)
    assert process.returncode in (0, None, -15)
    assert not recorder.invalid, recorder.invalid
    assert recorder.checked >= 1


async def delete_session(conn: Any, session_id: str) -> schema.DeleteSessionResponse:
    """``session/delete``: the SDK 0.12 client has no method for it, so through its
    connection, as its own methods send requests, with the answer parsed by its model."""
    answer = await conn._conn.send_request("session/delete", schema.DeleteSessionRequest(
        session_id=session_id).model_dump(mode="json", by_alias=True, exclude_none=True))
    return schema.DeleteSessionResponse.model_validate(answer or {})


def text(value: str) -> list[Any]:
    return [text_block(value)]
