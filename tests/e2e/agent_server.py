"""A published agent's script run as a stdio server, a client for it, and the two A2A
dialects' wire forms checked against the official SDK's types.

The client is a plain subprocess with a reader thread: responses are kept by id and
stream notifications (``task/statusUpdate``, ``task/artifactUpdate``) by their
``params.requestId``, so a test can keep many requests in flight on one server and
look at each one's items.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from a2a.compat.v0_3 import types as v03_types
from a2a.types import a2a_pb2
from google.protobuf import json_format

from tests.conftest import REPO
from tests.e2e.rawclient import frame
from tests.processes import stop

AGENTS = Path(__file__).resolve().parent / "agents"
EXAMPLES = REPO / "docs" / "examples"
TIMEOUT = 15.0
STREAM_NOTIFICATIONS = ("task/statusUpdate", "task/artifactUpdate")

Item = tuple[str, dict[str, Any]]  # (notification method, params)


class AgentServer:
    def __init__(self, script: Path, *args: str, cwd: Path, env: dict[str, str] | None = None,
                 handshake: bool = True):
        self.script, self.args, self.cwd = script, args, cwd
        self.env = {**os.environ, **(env or {})}
        self._ids = itertools.count(1)
        self._changed = threading.Condition()
        self._responses: dict[Any, dict[str, Any]] = {}
        self._items: dict[Any, list[Item]] = {}
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: stderr never blocks the server
        self._stderr_text = ""
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args], cwd=cwd, env=self.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
        )
        self._reader = threading.Thread(target=self._read, name=f"read {script.name}", daemon=True)
        self._reader.start()
        self._initialize_id: int | None = None
        self._initialize_result: dict[str, Any] | None = None
        self._responses_before_kill: int | None = None
        if handshake:  # at once, so servers started together load together
            self.handshake()

    @classmethod
    def agent(cls, name: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> AgentServer:
        """One of the scripts in ``tests/e2e/agents/``."""
        return cls(AGENTS / f"{name}.py", *args, cwd=cwd, env=env)

    def restarted(self) -> AgentServer:
        """Stop this server and start the same script again, on the same state. The new
        process is spawned first and imports while this one shuts down; it opens the
        state only at its ``initialize``, sent once this one has exited."""
        successor = AgentServer(self.script, *self.args, cwd=self.cwd, env=self.env, handshake=False)
        exit_code = self.close()
        assert exit_code == 0, f"{self.script.name} exited with {exit_code}; stderr:\n{self.stderr()[-2000:]}"
        successor.handshake()
        return successor

    # -- writing -------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def send(self, method: str, params: Any = None) -> int:
        """Send a request without waiting; its id."""
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """The whole response (``result`` or ``error``)."""
        return self.response(self.send(method, params))

    def result(self, method: str, params: Any = None) -> Any:
        response = self.call(method, params)
        assert "result" in response, f"{method} failed: {response.get('error')}"
        return response["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        response = self.call(method, params)
        assert "error" in response, f"{method} succeeded: {response.get('result')}"
        return response["error"]

    def handshake(self, options: dict[str, Any] | None = None) -> None:
        """Send ``initialize`` (with ``options`` as its ``initializationOptions``) and
        ``initialized`` without waiting for the answer."""
        params: dict[str, Any] = {"processId": None, "capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        self._initialize_id = self.send("initialize", params)
        self.notify("initialized", {})

    def initialize_result(self) -> dict[str, Any]:
        """The answer to the ``initialize`` of the handshake."""
        assert self._initialize_id is not None, "no handshake yet"
        if self._initialize_result is None:
            response = self.response(self._initialize_id)
            assert "result" in response, f"initialize failed: {response.get('error')}"
            self._initialize_result = response["result"]
        return self._initialize_result

    # -- reading -------------------------------------------------------------------
    def response(self, msg_id: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        self._wait_until(lambda: msg_id in self._responses, timeout, f"the response to {msg_id}")
        with self._changed:
            return self._responses.pop(msg_id)

    def items(self, msg_id: int) -> list[Item]:
        """The stream notifications sent so far for request ``msg_id``."""
        with self._changed:
            return list(self._items.get(msg_id, ()))

    def wait_for_items(self, msg_id: int, count: int, timeout: float = TIMEOUT) -> list[Item]:
        self._wait_until(lambda: len(self._items.get(msg_id, ())) >= count, timeout,
                         f"{count} stream items of request {msg_id}")
        return self.items(msg_id)

    def _wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not ready():
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no {what} from {self.script.name}; stderr:\n{self.stderr()[-2000:]}")
                self._changed.wait(min(left, 0.5))

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            headers: dict[str, str] = {}
            while (line := stdout.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                headers[name.lower()] = value.strip()
            if not line:
                break
            length = int(headers["content-length"])
            if len(body := stdout.read(length)) < length:
                break  # the server died in the middle of a message (a SIGKILL test)
            message = json.loads(body)
            with self._changed:
                self._route(message)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def kill_on_response(self, count: int) -> None:
        """SIGKILL the server from the reader thread as its ``count``-th response from
        now arrives. Killing there leaves no scheduling delay between seeing an answer and
        the kill, in which a fast server could finish everything still in flight."""
        with self._changed:
            self._responses_before_kill = count

    def _route(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self._responses[message.get("id")] = message
            if self._responses_before_kill is not None:
                self._responses_before_kill -= 1
                if self._responses_before_kill == 0:
                    self.proc.kill()
        elif message["method"] in STREAM_NOTIFICATIONS and "requestId" in message.get("params", {}):
            self._items.setdefault(message["params"]["requestId"], []).append((message["method"], message["params"]))

    # -- ending --------------------------------------------------------------------
    def stderr(self) -> str:
        if self._stderr.closed:
            return self._stderr_text
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self) -> int:
        """``shutdown`` and ``exit``; the exit code."""
        try:
            if self.proc.poll() is None:
                self.call("shutdown")
                self.notify("exit")
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(TIMEOUT)
        finally:
            stop(self.proc, self._reader, TIMEOUT)  # killed if the shutdown did not end it
        if not self._stderr.closed:  # the first close keeps the stderr text and closes its file
            self._stderr_text = self.stderr()
            self._stderr.close()
        return self.proc.returncode


# -- the two dialects -------------------------------------------------------------------
V1_TYPES = {"send": a2a_pb2.SendMessageResponse, "item": a2a_pb2.StreamResponse, "task": a2a_pb2.Task,
            "list": a2a_pb2.ListTasksResponse, "card": a2a_pb2.AgentCard}
V03_KINDS = {"task": "task", "status-update": "statusUpdate", "artifact-update": "artifactUpdate"}
V03_TYPES = {"task": v03_types.Task, "statusUpdate": v03_types.TaskStatusUpdateEvent,
             "artifactUpdate": v03_types.TaskArtifactUpdateEvent}


@dataclass(frozen=True)
class Dialect:
    """One A2A dialect's method names and wire forms, so a test runs in both."""

    version: str
    send: str
    stream: str
    get: str
    cancel: str
    subscribe: str
    list: str

    @property
    def v1(self) -> bool:
        return self.version == "1.0"

    def message(self, text: str, configuration: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        message = {"role": "ROLE_USER", "messageId": f"m-{time.monotonic_ns()}", "parts": [self.part(text)]}
        if not self.v1:
            message = {"kind": "message", **message, "role": "user"}
        params: dict[str, Any] = {"message": {**message, **extra}}
        if configuration:
            params["configuration"] = configuration
        return params

    def part(self, text: str) -> dict[str, Any]:
        return {"text": text} if self.v1 else {"kind": "text", "text": text}

    def state(self, name: str) -> str:
        return f"TASK_STATE_{name.upper().replace('-', '_')}" if self.v1 else name

    def role(self, name: str) -> str:
        return f"ROLE_{name.upper()}" if self.v1 else name

    @property
    def immediately(self) -> dict[str, Any]:
        return {"returnImmediately": True} if self.v1 else {"blocking": False}

    def task_of(self, send_result: dict[str, Any]) -> dict[str, Any]:
        """The task of a send result, checked against the spec's types."""
        if self.v1:
            exact_v1("send", send_result)
            return send_result["task"]
        exact_v03("task", send_result)
        return send_result

    def item(self, item: Item | dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(task, statusUpdate or artifactUpdate; the payload) of a stream item or
        result, checked against the spec's types."""
        params = item[1] if isinstance(item, tuple) else item
        params = {k: v for k, v in params.items() if k not in ("requestId", "eventId")}
        if self.v1:
            exact_v1("item", params)
            ((kind, payload),) = params.items()
            return kind, payload
        kind = V03_KINDS[params["kind"]]
        exact_v03(kind, params)
        return kind, params

    def text(self, task: dict[str, Any]) -> list[str]:
        return [m["parts"][0]["text"] for m in task.get("history", [])]


V1 = Dialect("1.0", "SendMessage", "SendStreamingMessage", "GetTask", "CancelTask", "SubscribeToTask", "ListTasks")
V03 = Dialect("0.3", "message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe", "tasks/list")
DIALECTS = pytest.mark.parametrize("dialect", [V1, V03], ids=["1.0", "0.3"])


def exact_v1(kind: str, value: dict[str, Any]) -> None:
    json_format.ParseDict(value, V1_TYPES[kind]())  # refuses a field the spec doesn't have


def exact_v03(kind: str, value: dict[str, Any]) -> None:
    dumped = V03_TYPES[kind].model_validate(value).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped == value  # the SDK reads every field we send, and nothing else
