"""ACP's framing: one JSON-RPC message per line (UTF-8 JSON, ``\\n``-terminated), both ways.

``Connection`` reads the client's lines, hands requests and notifications to the
server, matches the client's responses to the requests the agent sent it
(``session/request_permission``, ``fs/*``), and writes each message as one line.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from cleveragents.transports.lsp.pipe_writer import PipeWriter

logger = logging.getLogger("cleveragents.agent_client")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
AUTH_REQUIRED, RESOURCE_NOT_FOUND = -32000, -32002  # ACP's own codes
_PIECE = 1 << 16


class AgentClientError(Exception):
    """A refusal that goes back to the client as a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def payload(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class LineReader:
    """The input's lines, each at most ``max_size`` bytes. ``head`` is what was read
    before (the bytes that told the framing apart): it comes first."""

    def __init__(self, reader: Any, head: bytes, max_size: int):
        self._reader = reader
        self._pending = head
        self.max_size = max_size
        self._threaded = not isinstance(reader, asyncio.StreamReader)

    async def next(self) -> bytes | AgentClientError | None:
        """A line without its ``\\n``; an error for one too long (skipped); ``None`` at the end."""
        parts: list[bytes] = []
        size, too_large = 0, False
        while True:
            piece = await self._piece()
            if not piece:
                if too_large:
                    return _too_large(size, self.max_size)
                return b"".join(parts) if parts else None  # a last line without its newline counts
            size += len(piece)
            if size > self.max_size + 1:
                too_large, parts = True, []
            elif not too_large:
                parts.append(piece)
            if piece.endswith(b"\n"):
                if too_large:
                    return _too_large(size, self.max_size)
                return b"".join(parts)[:-1]

    async def _piece(self) -> bytes:
        if self._pending:
            end = self._pending.find(b"\n") + 1 or len(self._pending)
            piece, self._pending = self._pending[:end], self._pending[end:]
            if piece.endswith(b"\n"):
                return piece
            return piece + await self._piece()
        if self._threaded:
            return bytes(await self._reader.readline(_PIECE))
        try:
            return bytes(await self._reader.readuntil(b"\n"))
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except asyncio.LimitOverrunError as exc:  # a long line: a piece of it
            return bytes(await self._reader.read(exc.consumed))


def _too_large(size: int, limit: int) -> AgentClientError:
    return AgentClientError(INVALID_REQUEST, "Invalid request: message too large",
                            {"size": size, "max_message_size": limit})


class Connection:
    """The agent's side of one ACP connection."""

    def __init__(self, lines: LineReader, writer: PipeWriter):
        self._lines = lines
        self._writer = writer
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.input_ended = False  # no answer can come any more; answers to the client still go out

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, msg_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def refuse(self, msg_id: Any, error: AgentClientError) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": error.payload()})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Ask the client; its result, or ``AgentClientError`` with its error. Cancelling
        the caller forgets the request (a late answer is dropped)."""
        if self.input_ended:
            raise AgentClientError(INTERNAL_ERROR, "the client is gone")
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        try:
            self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(msg_id, None)

    def _answered(self, message: dict[str, Any]) -> None:
        future = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            logger.info("dropped a response to no request of ours (id %r)", message.get("id"))
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(AgentClientError(error.get("code", INTERNAL_ERROR), str(error.get("message", "")),
                                                  error.get("data")))
        else:
            future.set_result(message.get("result"))

    async def run(self, on_request: Callable[[Any, str, Any], Awaitable[None]],
                  on_notification: Callable[[str, Any], None]) -> None:
        """Read until end of input. Each request is served in its own task so a long
        ``session/prompt`` never holds up the ``session/cancel`` that follows it."""
        from cleveragents.a2a import envelope

        while (line := await self._lines.next()) is not None:
            if isinstance(line, AgentClientError):
                self.refuse(None, line)
                continue
            if not line.strip():
                continue
            incoming = envelope.read(line)
            if incoming.refusal is not None:
                self.send(incoming.refusal)
                continue
            message = incoming.message
            if incoming.kind == "response":
                self._answered(message)
            elif incoming.kind == "request":
                await on_request(message["id"], message["method"], message.get("params"))
            else:
                on_notification(message["method"], message.get("params"))
        self.close()

    def close(self) -> None:
        self.input_ended = True
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(AgentClientError(INTERNAL_ERROR, "the client is gone"))
