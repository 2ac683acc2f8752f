"""A blocking raw-bytes client for the stdio server, for hypothesis tests (which
call plain functions). A reader thread splits stdout into frames and fails loudly on
any byte that is not part of one."""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from tests.conftest import SERVER_COMMAND
from tests.processes import close_pipes, memory_bytes, stop

TIMEOUT = 15.0


def frame(body: bytes | dict[str, Any]) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def handshake(msg_id: Any = 0, **params: Any) -> bytes:
    """LSP's ``initialize`` (with ``msg_id``; ``params`` go into its params) and
    ``initialized``, as one write."""
    return (frame({"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
                   "params": {"processId": None, "capabilities": {}, **params}})
            + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))


def read_messages(out: BinaryIO, put: Callable[[Any], None]) -> None:
    """Each message on ``out`` to ``put``, until its end. A byte that is not part of a
    frame, or any other failure, is ``put`` too (an exception), and reading stops."""
    try:
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, sep, value = line.decode("ascii").partition(":")
                if not sep:
                    raise AssertionError(f"not a header line on stdout: {line[:80]!r}")
                headers[name.lower()] = value.strip()
            put(json.loads(out.read(int(headers["content-length"]))))
    except Exception as exc:  # handed to the test, which fails on it
        put(exc)


class StdioServer:
    def __init__(self, *args: str, command: list[str] | None = None, memory: bool = True, **popen: Any):
        """``command`` and ``popen`` (``subprocess.Popen`` keywords) start the server
        another way, e.g. as another user (``tests/security/identities.py``)."""
        self.stderr = tempfile.TemporaryFile()
        argv = [*(command or SERVER_COMMAND), *(["--memory"] if memory else []), *args]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, **popen)
        self.messages: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        read_messages(self.proc.stdout, self.messages.put)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def next_message(self) -> dict[str, Any]:
        try:
            message = self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no answer in {TIMEOUT} s; stderr: {self.stderr_text()[-2000:]}") from None
        if isinstance(message, Exception):
            raise message
        return message

    def until(self, ids: set[Any]) -> list[dict[str, Any]]:
        """Every message up to and including the responses to all of ``ids``."""
        seen: list[dict[str, Any]] = []
        waiting = set(ids)
        while waiting:
            message = self.next_message()
            seen.append(message)
            if "method" not in message and message.get("id") in waiting:
                waiting.discard(message["id"])
        return seen

    def initialize(self, **params: Any) -> dict[str, Any]:
        """LSP's handshake (``initialize`` with id 0, then ``initialized``): the server
        answers every other request with -32002 before it. The answer's result."""
        self.send(handshake(0, **params))
        response = self.until({0})[-1]
        assert "result" in response, f"initialize failed: {response.get('error')}"
        return response["result"]

    def rss_kib(self) -> int:
        resident = memory_bytes(self.pid)
        assert resident, f"no VmRSS for {self.pid}"
        return resident // 1024

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def finish(self) -> tuple[int, str]:
        """Close stdin and wait: the exit code and stderr."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        code = self.proc.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        close_pipes(self.proc, self._reader)
        return code, self.stderr_text()

    def kill(self) -> None:
        stop(self.proc, self._reader, TIMEOUT)
        self.stderr.close()
