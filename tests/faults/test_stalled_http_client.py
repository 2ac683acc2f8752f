"""An HTTP client that stops reading a stream: what waits for it stays bounded, and
once it passes ``CLEVERAGENTS_MAX_OUTPUT_BUFFER`` the server gives up on that stream
and cancels its task, while it goes on serving everyone else.

The server is a published agent that streams 4,000 chunks of 64 KiB (250 MiB) as fast
as it can; the client is a raw socket with a small receive buffer that reads the
response headers and nothing more.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.agent_server import AGENTS
from tests.processes import memory_bytes
from tests.security.http_process import TOKEN

LIMIT = 1024 * 1024
# Resident memory may grow this much past its size before the stream (the flood is 250 MiB).
RSS_GROWTH_BOUND = 48 * 1024 * 1024
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
V1 = {"A2A-Version": "1.0"}
MESSAGE = {"message": {"role": "ROLE_USER", "messageId": "m-flood", "parts": [{"text": "flood"}]}}
STREAMS = {
    "json-rpc": ("/a2a", "application/json",
                 {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": MESSAGE}),
    "rest": ("/message:stream", "application/a2a+json", MESSAGE),
}


def start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, str, str]:
    log = tmp_path / "stderr.log"
    env = {**os.environ, "CLEVERAGENTS_MAX_OUTPUT_BUFFER": str(LIMIT)}
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, str(AGENTS / "flood_agent.py"), "0"], cwd=tmp_path, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if match := LISTENING.search(log.read_text(errors="replace")):
            return proc, log, match.group(1), TOKEN.search(log.read_text()).group(1)  # the token it made
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"the agent did not start: {log.read_text(errors='replace')[-2000:]}")


def stalled_request(port: str, token: str, path: str, content_type: str, body: dict) -> socket.socket:
    """Send the request, read the status line and headers, then never read again."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.connect(("127.0.0.1", int(port)))
    data = json.dumps(body).encode()
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
                 f"Authorization: Bearer {token}\r\n"
                 f"Accept: text/event-stream\r\nA2A-Version: 1.0\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                 + data)
    head = sock.recv(512)
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


@pytest.mark.parametrize("binding", sorted(STREAMS))
def test_a_stream_nobody_reads_is_given_up_and_its_task_canceled(tmp_path, binding):
    proc, log, port, token = start(tmp_path)
    sock = None
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10,
                          headers={**V1, "Authorization": f"Bearer {token}"}) as http:
            assert http.get("/.well-known/agent-card.json").status_code == 200
            baseline, peak = memory_bytes(proc.pid), 0
            sock = stalled_request(port, token, *STREAMS[binding])
            deadline = time.monotonic() + 30
            while "stopped reading" not in log.read_text(errors="replace") and time.monotonic() < deadline:
                peak = max(peak, memory_bytes(proc.pid))
                time.sleep(0.02)
            assert "the client stopped reading its stream" in log.read_text(errors="replace"), \
                log.read_text(errors="replace")[-2000:]
            # The task is canceled, and everyone else is still served.
            while time.monotonic() < deadline:
                peak = max(peak, memory_bytes(proc.pid))
                listed = http.post("/a2a", json={"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}})
                [task] = listed.json()["result"]["tasks"]
                if task["status"]["state"] == "TASK_STATE_CANCELED":
                    break
                time.sleep(0.05)
            assert task["status"]["state"] == "TASK_STATE_CANCELED", task["status"]
            assert peak - baseline < RSS_GROWTH_BOUND, (baseline, peak)
            health = http.post("/a2a", json={"jsonrpc": "2.0", "id": 3, "method": "_cleveragents/health/check"})
            assert health.json()["result"]["status"] == "ok"
    finally:
        if sock is not None:
            sock.close()
        proc.terminate()
        assert proc.wait(15) == 0
    assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")[-3000:]
