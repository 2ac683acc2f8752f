"""A full disk under a real HTTP server process (``python -m cleveragents.transports.http``
on 127.0.0.1): the state database's filesystem fills up while clients send over
JSON-RPC, the REST binding and SSE.

Each send fails with an error naming the cause, over every binding: JSON-RPC answers
HTTP 200 with a JSON-RPC error ("no space left", reason RESOURCE_EXHAUSTED with
storage_full), REST a ``google.rpc.Status`` RESOURCE_EXHAUSTED with HTTP 507
(Insufficient Storage, not 429: a full disk is no rate limit to retry after), never a
bare 500; a streaming send ends, within a timeout, with an error answer or an error
event. No error text holds an absolute path. Reads (ListTasks over both bindings,
GetTask, the agent card, /healthz, the health check) keep working while the disk is
full, and no refused send leaves a task behind. Once space returns the same sends
succeed, ListTasks counts exactly the acknowledged tasks, the server stops cleanly and
its database passes an integrity check. The filesystem is a small tmpfs mount (root
only); without the right to mount the test is skipped. The mount, the filler and the
JSON-RPC error check come from the stdio sibling, ``test_disk_full.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract.runners import sse_messages
from tests.faults.test_disk_full import Filler, assert_names_the_cause, mount_tmpfs
from tests.security.http_process import TOKEN

V1 = {"A2A-Version": "1.0"}
REST = {**V1, "Content-Type": "application/a2a+json", "Accept": "application/a2a+json"}
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
STREAM_TIMEOUT = 5.0


@pytest.fixture
def state_disk(tmp_path: Path) -> Iterator[Path]:
    """A small filesystem for the state directory."""
    target = tmp_path / "state-fs"
    mount_tmpfs(target)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


class HttpServer:
    """``python -m cleveragents.transports.http`` on 127.0.0.1 and a free port. Its
    stderr goes to a file off the small disk, so its logs can neither fill that disk
    nor block on a full pipe."""

    def __init__(self, workspace: Path, state: Path, log: Path):
        self.log = log
        with open(log, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cleveragents.transports.http", "--workspace", str(workspace),
                 "--state-dir", str(state), "--host", "127.0.0.1", "--port", "0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        self.url = f"http://127.0.0.1:{self._port()}"
        # No credential is configured: the server made a token and printed it.
        self.headers = {"Authorization": f"Bearer {TOKEN.search(self.log.read_text()).group(1)}"}

    def _port(self) -> str:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if match := LISTENING.search(self.log.read_text(errors="replace")):
                return match.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        pytest.fail(f"the HTTP server did not start: {self.log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                return self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait(10)


def message(text: str) -> dict[str, Any]:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}


class Client:
    def __init__(self, http: httpx.AsyncClient):
        self.http = http
        self.last_id = 0

    async def call(self, method: str, params: dict[str, Any] | None = None) -> httpx.Response:
        self.last_id += 1
        body = {"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params or {}}
        return await self.http.post("/a2a", json=body, headers=V1)

    async def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        answer = await self.call(method, params)
        assert answer.status_code == 200 and "result" in answer.json(), (method, answer.status_code, answer.text)
        return answer.json()["result"]

    async def send_rest(self, text: str) -> httpx.Response:
        return await self.http.post("/message:send", content=json.dumps(message(text)), headers=REST)

    async def stream(self, binding: str, text: str) -> tuple[int, list[tuple[str | None, dict[str, Any]]]]:
        """A streaming send over ``binding`` ("jsonrpc" or "rest"): its HTTP status and
        its SSE events, or its one JSON answer as ``[("json", body)]``. A stream that
        does not end within STREAM_TIMEOUT fails the test."""
        if binding == "jsonrpc":
            path, headers = "/a2a", {**V1, "Content-Type": "application/json"}
            body = {"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params": message(text)}
        else:
            path, headers, body = "/message:stream", REST, message(text)
        headers = {**headers, "Accept": "text/event-stream"}

        async def read() -> tuple[int, list[tuple[str | None, dict[str, Any]]]]:
            async with self.http.stream("POST", path, content=json.dumps(body), headers=headers) as answer:
                if not answer.headers["content-type"].startswith("text/event-stream"):
                    return answer.status_code, [("json", json.loads(await answer.aread()))]
                return answer.status_code, [(event, json.loads(data)) async for event, _, data in sse_messages(answer)]

        return await asyncio.wait_for(read(), STREAM_TIMEOUT)


def assert_no_path(text: str, *roots: Path) -> None:
    assert not re.search(r"(?<![\w.])/(tmp|work|root|home|var|usr|proc|dev)\b", text), f"a path leaked: {text}"
    for root in roots:
        assert str(root) not in text, f"a path leaked: {text}"


def assert_rest_names_the_cause(answer: httpx.Response) -> None:
    # A full disk is 507, not RESOURCE_EXHAUSTED's usual 429 (a client would retry it at once).
    assert answer.status_code == 507, (answer.status_code, answer.text)
    assert answer.headers["content-type"].startswith("application/a2a+json"), answer.headers
    error = answer.json()["error"]
    assert (error["code"], error["status"]) == (507, "RESOURCE_EXHAUSTED"), error
    assert "no space left" in error["message"] and "/" not in error["message"], error
    assert '"reason": "storage_full"' in json.dumps(error["details"]), error


def assert_stream_fails_clearly(binding: str, status: int, events: list[tuple[str | None, dict[str, Any]]]) -> None:
    """Refused before its first event (a plain error answer) or ended by an error event."""
    assert events, f"the {binding} stream ended with nothing"
    kind, last = events[-1]
    if binding == "jsonrpc":
        assert status == 200 and kind in ("json", None) and "error" in last, (status, events)
        assert_names_the_cause(last["error"], {"reason": "RESOURCE_EXHAUSTED"})
    else:
        assert kind in ("json", "error") and "error" in last, (status, events)
        assert status == (507 if kind == "json" else 200), (status, events)
        error = last["error"]
        assert error["status"] == "RESOURCE_EXHAUSTED" and "no space left" in error["message"], error


async def test_a_full_state_disk_fails_http_sends_clearly_and_recovers(tmp_path, state_disk):
    workspace, state = tmp_path / "workspace", state_disk / "state"
    workspace.mkdir()
    server = HttpServer(workspace, state, tmp_path / "server.log")
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10, headers=server.headers) as http:
            client = Client(http)

            # 1. Room on the disk: a send over each binding is acknowledged.
            sent = await client.result("SendMessage", message("before"))
            assert sent["task"]["status"]["state"] == "TASK_STATE_COMPLETED", sent
            sent_rest = await client.send_rest("before-rest")
            assert sent_rest.status_code == 200 and "task" in sent_rest.json(), sent_rest.text
            acknowledged = 2

            # 2. The state's disk is full: every send is refused, naming the cause.
            filler = Filler(state_disk)
            filler.fill()
            for attempt in range(3):
                refused = await client.call("SendMessage", message(f"no room {attempt}"))
                assert refused.status_code == 200, refused.text  # JSON-RPC errors ride on HTTP 200
                assert_names_the_cause(refused.json()["error"], {"reason": "RESOURCE_EXHAUSTED"})
                assert_names_the_cause(refused.json()["error"], {"reason": "storage_full"})
                assert_no_path(refused.text, tmp_path)
                refused_rest = await client.send_rest(f"no room rest {attempt}")
                assert_rest_names_the_cause(refused_rest)
                assert_no_path(refused_rest.text, tmp_path)
            for binding in ("jsonrpc", "rest"):
                status, events = await client.stream(binding, f"no room {binding} stream")
                assert_stream_fails_clearly(binding, status, events)
                assert_no_path(json.dumps(events), tmp_path)

            # 3. Reads still work, and no refused send left a task behind.
            assert (await client.result("ListTasks"))["totalSize"] == acknowledged
            listed = await http.get("/tasks", headers=V1)
            assert listed.status_code == 200 and listed.json()["totalSize"] == acknowledged, listed.text
            assert (await http.get(f"/tasks/{sent['task']['id']}", headers=V1)).status_code == 200
            card = await http.get("/.well-known/agent-card.json")
            assert card.status_code == 200 and card.json()["supportedInterfaces"][0]["url"] == server.url + "/a2a"
            assert (await http.get("/healthz")).json() == {"status": "ok"}
            health = await client.result("_cleveragents/health/check")
            assert health["status"] == "ok" and health["store"]["ok"] is True, health

            # 4. Space is back: the same sends succeed, and only they are counted.
            filler.release()
            sent = await client.result("SendMessage", message("after"))
            assert sent["task"]["status"]["state"] == "TASK_STATE_COMPLETED", sent
            assert (await client.send_rest("after-rest")).status_code == 200
            for binding in ("jsonrpc", "rest"):
                status, events = await client.stream(binding, f"after {binding} stream")
                assert status == 200 and events and all(kind is None for kind, _ in events), (status, events)
                assert not any("error" in item for _, item in events), events
            acknowledged += 4
            assert (await client.result("ListTasks"))["totalSize"] == acknowledged
            assert (await http.get("/tasks", headers=V1)).json()["totalSize"] == acknowledged
    finally:
        exit_code = server.stop()
    log = server.log.read_text(errors="replace")
    assert exit_code == 0, log[-2000:]
    # A full disk is the machine's state, not a bug: one warning line a refusal, no traceback.
    assert "the state database or disk is full" in log and "Traceback" not in log, log[-3000:]
    with sqlite3.connect(state / "state.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
