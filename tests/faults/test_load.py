"""Load on loopback through real stdio servers: 100 streams at once, and 10,000 tasks
pipelined 64 deep into the SQLite store, with the server's memory sampled throughout.

No request may fail, every stream must end with its terminal event, and every task
must be in the store afterwards, and again after a restart (the counts match). The servers run with a small
output buffer limit (``tests/faults/test_stalled_client.py``): a client that reads
is never taken for one that stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.e2e.agent_server import V1, AgentServer
from tests.e2e.agents.slow_agent import CHUNKS, DELAY
from tests.processes import memory_bytes

STREAMS = 100
TASKS = 10_000
DEPTH = 64
# Resident memory may grow this much over the size after the first request.
RSS_GROWTH_BOUND = 64 * 1024 * 1024
SMALL_OUTPUT_BUFFER = {"CLEVERAGENTS_MAX_OUTPUT_BUFFER": str(256 * 1024)}


@contextmanager
def peak_rss(pid: int) -> Iterator[list[int]]:
    """Samples the process's RSS every 20 ms; the list holds the peak afterwards."""
    peak = [memory_bytes(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], memory_bytes(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


def test_100_streams_at_once_each_end_with_their_terminal_event(tmp_path):
    server = AgentServer.agent("slow_agent", cwd=tmp_path, env=SMALL_OUTPUT_BUFFER)
    try:
        server.result("ListTasks", {})
        baseline = memory_bytes(server.proc.pid)
        started = time.monotonic()
        with peak_rss(server.proc.pid) as peak:
            msg_ids = [server.send("SendStreamingMessage", V1.message(f"stream {n}")) for n in range(STREAMS)]
            finals = [server.response(msg_id, timeout=60) for msg_id in msg_ids]
        elapsed = time.monotonic() - started
        task_ids = set()
        for msg_id, final in zip(msg_ids, finals, strict=True):
            assert "result" in final, final
            assert final["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", final
            items = server.items(msg_id)
            kinds = [next(iter(set(params) - {"requestId", "eventId"})) for _, params in items]
            assert kinds == ["task", "statusUpdate", *["artifactUpdate"] * CHUNKS, "statusUpdate"], kinds
            assert items[-1][1]["statusUpdate"] == final["result"]["statusUpdate"]
            task_ids.add(items[0][1]["task"]["id"])
        assert len(task_ids) == STREAMS
        # Together, not one after another: 100 streams of CHUNKS * DELAY seconds each.
        assert elapsed < STREAMS * CHUNKS * DELAY / 4, elapsed
        assert peak[0] - baseline < RSS_GROWTH_BOUND, (baseline, peak[0])
        assert server.result("ListTasks", {"pageSize": 1})["totalSize"] == STREAMS
    finally:
        assert server.close() == 0
    assert "stopped reading" not in server.stderr()


def test_10000_tasks_pipelined_with_bounded_memory(tmp_path):
    env = {**SMALL_OUTPUT_BUFFER, "CLEVERAGENTS_MAX_TERMINAL_TASKS": str(2 * TASKS)}
    server = AgentServer.agent("echo_agent", cwd=tmp_path, env=env)
    try:
        server.result("ListTasks", {})
        baseline = memory_bytes(server.proc.pid)
        completed = 0
        with peak_rss(server.proc.pid) as peak:
            in_flight: list[tuple[int, int]] = []
            for n in range(TASKS):
                in_flight.append((n, server.send("SendMessage", V1.message(f"task {n}"))))
                if len(in_flight) >= DEPTH:
                    completed += check_echo(server, *in_flight.pop(0))
            for n, msg_id in in_flight:
                completed += check_echo(server, n, msg_id)
        assert completed == TASKS
        assert server.result("ListTasks", {"pageSize": 1})["totalSize"] == TASKS
        assert peak[0] - baseline < RSS_GROWTH_BOUND, (baseline, peak[0])
    finally:
        assert server.close() == 0
    assert "stopped reading" not in server.stderr()
    after = AgentServer.agent("echo_agent", cwd=tmp_path, env=env)  # the same SQLite store, reopened
    try:
        assert after.result("ListTasks", {"pageSize": 1})["totalSize"] == TASKS
    finally:
        assert after.close() == 0


def check_echo(server: AgentServer, n: int, msg_id: int) -> int:
    response = server.response(msg_id)
    assert "result" in response, response
    task = response["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and V1.text(task) == [f"task {n}"] * 2, task
    return 1
