"""A bare client for the stdio server: a subprocess, Content-Length frames, no
library in between, so tests can send exactly the bytes they mean."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.conftest import SERVER_COMMAND

TIMEOUT = 15.0


def frame(message: dict[str, Any] | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def unframe(output: bytes) -> list[dict[str, Any]]:
    """The messages of a server's whole stdout; every byte must be part of a frame."""
    messages = []
    while output:
        head, separator, rest = output.partition(b"\r\n\r\n")
        assert separator, f"not a frame: {output[:80]!r}"
        headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n"))
        length = int(headers[b"Content-Length"])
        messages.append(json.loads(rest[:length]))
        output = rest[length:]
    return messages


class RawServer:
    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.messages: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, *args: str, cwd: Path | None = None, command: Sequence[str] = SERVER_COMMAND) -> RawServer:
        """``command`` and ``args``: the server's argv (another entry point, ``agents serve``)."""
        proc = await asyncio.create_subprocess_exec(
            *command, *args, cwd=cwd,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    @classmethod
    async def start_initialized(cls, *args: str, cwd: Path | None = None, **params: Any) -> RawServer:
        """A server past LSP's handshake, ready to serve any request; ``params`` go into
        ``initialize``'s params."""
        server = await cls.start(*args, cwd=cwd)
        try:
            response = await server.initialize(**params)
            assert "result" in response, f"initialize failed: {response.get('error')}"
        except BaseException:
            await server.kill()
            raise
        return server

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send_message(self, message: dict[str, Any] | bytes) -> None:
        self.send(frame(message))

    async def read_message(self) -> dict[str, Any]:
        """The next message; every byte on stdout must be part of a frame."""
        assert self.proc.stdout is not None
        headers = {}
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), TIMEOUT)
            assert line, "the server closed stdout"
            if line == b"\r\n":
                break
            name, _, value = line.decode("ascii").partition(":")
            assert _, f"not a header line on stdout: {line!r}"
            headers[name.lower()] = value.strip()
        body = await asyncio.wait_for(self.proc.stdout.readexactly(int(headers["content-length"])), TIMEOUT)
        message = json.loads(body)
        self.messages.append(message)
        return message

    async def response(self, msg_id: Any) -> dict[str, Any]:
        """The response with ``msg_id`` (skipping notifications)."""
        while True:
            message = await self.read_message()
            if "method" not in message and message.get("id") == msg_id:
                return message

    async def request(self, msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_message(message)
        return await self.response(msg_id)

    async def initialize(self, **params: Any) -> dict[str, Any]:
        """LSP's handshake (``initialize`` with id 0, then ``initialized``): the server
        answers every other request with -32002 before it."""
        response = await self.request(0, "initialize", {"processId": None, "capabilities": {}, **params})
        self.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return response

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    async def wait(self) -> tuple[int, bytes, bytes]:
        """Exit code, the rest of stdout, and stderr."""
        out, err = await asyncio.wait_for(self.proc.communicate(), TIMEOUT)
        return self.proc.returncode, out, err

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
