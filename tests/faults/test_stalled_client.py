"""A client that stops reading: the server's waiting output stays bounded, and once
it passes the limit the server gives up on the client, cancels its tasks and exits.

The client here writes many streaming requests to a published agent and never reads
its stdout. The limit is ``CLEVERAGENTS_MAX_OUTPUT_BUFFER`` (``--max-output-buffer``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import SERVER_COMMAND
from tests.e2e.agent_server import AGENTS, V1, AgentServer
from tests.e2e.rawclient import frame
from tests.processes import memory_bytes, stop

LIMIT = 256 * 1024
STREAMS = 300
TEXT = "x" * 4000  # each stream's first item carries the message: ~1.2 MB in all
# The server's resident memory may grow this much past its size after start-up.
RSS_GROWTH_BOUND = 48 * 1024 * 1024


def test_a_client_that_stops_reading_is_given_up_and_its_tasks_canceled(tmp_path):
    env = {**os.environ, "CLEVERAGENTS_MAX_OUTPUT_BUFFER": str(LIMIT)}
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as err:
        proc = subprocess.Popen([sys.executable, str(AGENTS / "slow_agent.py")], cwd=tmp_path, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdin is not None
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                "params": {"processId": None, "capabilities": {}}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        proc.stdin.flush()
        time.sleep(0.5)  # started, before the flood
        baseline, peak = memory_bytes(proc.pid), 0
        try:
            for n in range(STREAMS):
                request = {"jsonrpc": "2.0", "id": 100 + n, "method": "SendStreamingMessage",
                           "params": V1.message(f"{n} {TEXT}")}
                proc.stdin.write(frame(request))
                proc.stdin.flush()
                peak = max(peak, memory_bytes(proc.pid))
        except BrokenPipeError:
            pass  # the server already gave up and closed its end
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline:
            peak = max(peak, memory_bytes(proc.pid))
            time.sleep(0.02)
        assert proc.poll() is not None, "the server kept serving a client that never reads"
    finally:
        stop(proc)
    log = stderr.read_text()
    assert "the client stopped reading" in log and f"more than {LIMIT} bytes" in log, log[-2000:]
    assert "Traceback" not in log, log[-4000:]
    assert peak - baseline < RSS_GROWTH_BOUND, (baseline, peak)

    # Nothing is left running: the streams that were in flight were canceled.
    server = AgentServer.agent("slow_agent", cwd=tmp_path)
    try:
        tasks = server.result("ListTasks", {"pageSize": 100, "historyLength": 1})
        states = [t["status"]["state"] for t in tasks["tasks"]]
        assert tasks["totalSize"] >= 1 and "TASK_STATE_CANCELED" in states, states
        assert not {"TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"} & set(states), states
    finally:
        assert server.close() == 0


@pytest.mark.parametrize("method, params", [
    ("SendMessage", V1.message(TEXT)),
    # Answered while the LSP layer loads (about 5 KB each): the limit holds then too.
    ("_cleveragents/registry/tool/list", {}),
], ids=["SendMessage", "tool-list"])
def test_the_backend_gives_up_at_its_max_output_buffer_and_exits_1(tmp_path, method, params):
    """``--max-output-buffer`` on the backend: requests only (no streams), and the
    exit code says the client was dropped."""
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as err:
        proc = subprocess.Popen([*SERVER_COMMAND, "--workspace", str(tmp_path), "--memory",
                                 "--max-output-buffer", str(LIMIT)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdin is not None
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                "params": {"processId": None, "capabilities": {}}}))
        try:
            for n in range(1, 500):
                proc.stdin.write(frame({"jsonrpc": "2.0", "id": n, "method": method, "params": params}))
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        assert proc.wait(15) == 1
    finally:
        stop(proc)
    log = stderr.read_text()
    assert f"more than {LIMIT} bytes" in log and "Traceback" not in log, log[-2000:]
