"""Clients for the stall attacks: a real stdio server and a real HTTP server, each
spawned as a test identity, with many calls in flight at once.

``call`` sends one JSON-RPC request and waits for its answer while others are
pending: the stdio client reads every frame in one task and hands each response to
the call that waits for it. ``health_latencies`` measures what an editor would see: the
round trip of ``_cleveragents/health/check`` while other work runs.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.rawclient import frame
from tests.security.identities import Identity

HEALTH = "_cleveragents/health/check"
# Answers bigger than this are not parsed here: parsing megabytes of JSON holds this
# process's GIL, and the health samples taken meanwhile would time the client, not the server.
PARSED_BYTES = 1 << 20
_LEADING_ID = re.compile(rb'^\{"jsonrpc":\s*"2\.0",\s*"id":\s*(\d+)')
TOKEN = "stall-test-token"
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
START_TIMEOUT = 60.0

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class StdioServer:
    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, identity: Identity, workspace: Path, env: dict[str, str] | None = None) -> StdioServer:
        options = identity.popen_options()
        options["env"] = {**options["env"], **(env or {})}
        proc = await asyncio.create_subprocess_exec(
            *identity.server_command(), "--workspace", str(workspace), cwd=str(workspace),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            limit=64 * 1024 * 1024, **options)
        server = cls(proc)
        await asyncio.wait_for(server.call("initialize", {"processId": None, "capabilities": {}}), START_TIMEOUT)
        server._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await server.call(HEALTH, {})  # the services start on the first request: that is start-up, not a stall
        return server

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(message))

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            headers: dict[str, str] = {}
            while (line := await self.proc.stdout.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                headers[name.lower()] = value.strip()
            if not line:
                break
            body = await self.proc.stdout.readexactly(int(headers["content-length"]))
            if len(body) > PARSED_BYTES and (leading := _LEADING_ID.match(body)):
                message = {"id": int(leading.group(1)), "raw": body}  # see PARSED_BYTES
            else:
                message = json.loads(body)
            future = self.waiting.pop(message.get("id"), None) if "method" not in message else None
            if future is not None and not future.done():
                future.set_result(message)
        for future in self.waiting.values():
            future.set_exception(ConnectionError("the server closed stdout"))

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer; one over ``PARSED_BYTES`` as ``{"id", "raw": bytes}``."""
        msg_id = next(self.ids)
        future = self.waiting[msg_id] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await future

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()
        self.reader.cancel()


class HttpServer:
    """``python -m cleveragents.transports.http`` on 127.0.0.1 and a free port."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str):
        self.proc = proc
        self.url = url
        self.client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(120.0), headers={
            "Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"})
        self.ids = itertools.count(1)

    @classmethod
    async def start(cls, identity: Identity, workspace: Path, env: dict[str, str] | None = None) -> HttpServer:
        options = identity.popen_options()
        options["env"] = {**options["env"], **(env or {})}
        proc = await asyncio.create_subprocess_exec(
            *identity.server_command("cleveragents.transports.http"), "--workspace", str(workspace),
            "--port", "0", "--auth-token", TOKEN, cwd=str(workspace),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            **options)
        assert proc.stderr is not None
        seen = []
        while True:  # other lines (a notice, a warning) may come first
            line = (await asyncio.wait_for(proc.stderr.readline(), START_TIMEOUT)).decode(errors="replace")
            assert line, f"the HTTP server exited before listening: {''.join(seen)}"
            seen.append(line)
            if match := LISTENING.search(line):
                break
        server = cls(proc, match.group(1))
        asyncio.ensure_future(server._drain(proc.stderr))
        await server.call(HEALTH, {})
        return server

    @staticmethod
    async def _drain(stream: asyncio.StreamReader) -> None:
        while await stream.read(65536):
            pass

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        response = await self.client.post("/a2a", json=body)
        if len(response.content) > PARSED_BYTES:
            return {"id": body["id"], "raw": response.content}  # see PARSED_BYTES
        return response.json()

    async def close(self) -> None:
        await self.client.aclose()
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()


def message(text: str) -> dict[str, Any]:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{time.monotonic_ns()}", "parts": [{"text": text}]}}


def reply_text(answer: dict[str, Any]) -> str:
    """The agent's reply in a SendMessage answer (the task's artifacts)."""
    assert "result" in answer, answer
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    return "".join(part.get("text", "") for artifact in task.get("artifacts", []) for part in artifact["parts"])


async def health_latencies(call: Call, *, samples: int, interval: float = 0.02,
                           timeout: float = 10.0) -> list[float]:
    """The round trip of ``samples`` health checks, one every ``interval`` seconds. A
    check that gets no answer in ``timeout`` seconds fails the test: the server stalled."""
    latencies = []
    for _ in range(samples):
        started = time.perf_counter()
        answer = await asyncio.wait_for(call(HEALTH, {}), timeout)
        latencies.append(time.perf_counter() - started)
        assert answer.get("result", {}).get("status") in {"ok", "degraded"}, answer
        await asyncio.sleep(interval)
    return latencies


def describe(latencies: list[float]) -> str:
    ms = sorted(x * 1000 for x in latencies)
    return (f"{len(ms)} samples: median {statistics.median(ms):.1f} ms, p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms, "
            f"max {ms[-1]:.1f} ms")
