"""The stdio server run as an ``Identity``, and a plain client for it: frames in, frames
out, a reader thread that files responses by id, so an attack test can run it as root
and as an unprivileged user alike."""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.rawclient import frame
from tests.processes import stop
from tests.security.identities import Identity

TIMEOUT = 30.0
PLAN = "_cleveragents/plan/"


class IdentityServer:
    def __init__(self, identity: Identity, workspace: Path, *args: str, env: dict[str, str] | None = None,
                 wrapper: list[str] | None = None) -> None:
        """``wrapper`` goes before the server's command line (``unshare ... --``)."""
        self.identity, self.workspace, self.args = identity, workspace, args
        options = identity.popen_options()
        options["env"] = {**options["env"], **(env or {})}
        self.env = env or {}
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([*(wrapper or []), *identity.server_command(), "--workspace", str(workspace), *args],
                                     cwd=workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     **options)
        self._ids = itertools.count(1)
        self._responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr_text: str | None = None  # kept when the server is closed
        self.result("initialize", {"processId": None, "capabilities": {}})
        self.notify("initialized", {})

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            headers = {}
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            if not line:
                return
            body = stream.read(int(headers["content-length"]))
            message = json.loads(body)
            with self._changed:
                if "id" in message and "method" not in message:
                    self._responses[message["id"]] = message
                else:
                    self.notifications.append(message)
                self._changed.notify_all()

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def call(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> dict[str, Any]:
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)
        deadline = time.monotonic() + timeout
        with self._changed:
            while msg_id not in self._responses:
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, \
                    f"no answer to {method} (exit {self.proc.poll()}); stderr:\n{self.stderr()[-3000:]}"
                self._changed.wait(min(left, 0.5))
            return self._responses.pop(msg_id)

    def result(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        response = self.call(method, params, timeout)
        assert "result" in response, f"{method} failed: {response.get('error')}"
        return response["result"]

    def stderr(self) -> str:
        if self._stderr_text is not None:
            return self._stderr_text
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    # -- plans ----------------------------------------------------------------------
    def run_plan(self, action: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Use ``action`` and execute it to its end; the plan's status."""
        plan = self.result(PLAN + "use", {"action_name": action, "arguments": arguments,
                                          "automation_profile": "autonomous"})
        self.call(PLAN + "execute", {"plan_id": plan["plan_id"]}, timeout=120)
        return self.settled(plan["plan_id"])

    def settled(self, plan_id: str, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (status := self.result(PLAN + "status", {"plan_id": plan_id}))["state"] == "running":
            assert time.monotonic() < deadline, f"plan {plan_id} still running"
            time.sleep(0.05)
        return status

    def close(self) -> int:
        if self.proc.poll() is None:
            with contextlib.suppress(AssertionError, OSError, subprocess.TimeoutExpired):  # then stop() kills it
                self.call("shutdown", timeout=10)
                self.notify("exit")
                self.proc.wait(10)
        stop(self.proc, self._reader, TIMEOUT)
        if self._stderr_text is None:  # the first close keeps the stderr text and closes its file
            self._stderr_text = self.stderr()
            self._stderr.close()
        return self.proc.returncode
