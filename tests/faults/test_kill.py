"""SIGKILL of a published agent's stdio server during a burst of store writes and
during a stream, then a restart on the same SQLite state.

A send whose response reached the client is acknowledged: its task must survive the
kill. A task that was streaming when the server died comes back failed with the
restart reason, its history kept. (SIGKILL during a plan's apply and execute is in
``tests/e2e/test_plans_stdio.py``.)
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleveragents.app.tasks import RESTART_REASON
from tests.e2e.agent_server import TIMEOUT, V1, AgentServer

BURST = 400
# Kill once this many answers have arrived: the rest of the burst is still in flight.
KILL_AFTER = 100


def state_db(cwd: Path) -> Path:
    return cwd / ".cleveragents" / "state.db"


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def kill(server: AgentServer) -> None:
    server.proc.kill()
    server.proc.wait()
    server.close()  # joins the reader, keeps stderr


@pytest.fixture(scope="module")
def first_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AgentServer]]:
    """Both tests' first servers, started together so they load side by side."""
    servers = {name: AgentServer.agent(name, cwd=tmp_path_factory.mktemp(name)) for name in ("echo_agent", "slow_agent")}
    yield servers
    for server in servers.values():
        if server.proc.poll() is None:  # its test did not run: it never got an initialize
            server.proc.kill()
            server.proc.wait()
        server.close()


def successor(server: AgentServer) -> AgentServer:
    """The same script on the same state, importing meanwhile; ``handshake`` once
    ``server`` is dead."""
    return AgentServer(server.script, *server.args, cwd=server.cwd, env=server.env, handshake=False)


def test_every_acknowledged_send_survives_a_sigkill_mid_burst(first_servers):
    server = first_servers["echo_agent"]
    cwd = server.cwd
    server.initialize_result()
    after = successor(server)
    server.kill_on_response(KILL_AFTER)
    msg_ids = []
    try:
        for n in range(BURST):
            msg_ids.append(server.send("SendMessage", V1.message(f"burst {n}")))
    except BrokenPipeError:
        pass  # killed before the whole burst was written
    server.proc.wait(TIMEOUT)
    server.close()
    # Acknowledged: every answer that reached the client, including those still in the
    # pipe when the server died.
    acknowledged = {}
    for msg_id in msg_ids:
        if (response := server._responses.get(msg_id)) is not None:
            task = response["result"]["task"]
            acknowledged[task["id"]] = task
    assert KILL_AFTER <= len(acknowledged) < BURST, f"the kill landed after the burst: {len(acknowledged)}"
    assert integrity(state_db(cwd)) == "ok"

    after.handshake()
    try:
        gets = {task_id: after.send("GetTask", {"id": task_id}) for task_id in acknowledged}
        for task_id, msg_id in gets.items():
            response = after.response(msg_id)
            assert "result" in response, f"an acknowledged task was lost: {task_id}: {response}"
            stored = response["result"]
            assert stored["status"]["state"] == "TASK_STATE_COMPLETED", stored
            assert V1.text(stored) == V1.text(acknowledged[task_id]), task_id
        total = after.result("ListTasks", {"pageSize": 1})["totalSize"]
        assert len(acknowledged) <= total <= BURST
    finally:
        assert after.close() == 0
    assert integrity(state_db(cwd)) == "ok"


def test_a_stream_killed_midway_comes_back_failed_with_its_history(first_servers):
    server = first_servers["slow_agent"]
    after = successor(server)
    msg_id = server.send("SendStreamingMessage", V1.message("go"))
    items = server.wait_for_items(msg_id, 3)  # the task, working, the first chunk
    task_id = items[0][1]["task"]["id"]
    kill(server)

    after.handshake()
    try:
        task = after.result("GetTask", {"id": task_id})
        assert task["status"]["state"] == "TASK_STATE_FAILED", task
        assert task["status"]["message"]["parts"] == [{"text": RESTART_REASON}]
        assert V1.text(task)[0] == "go", task
        # Terminal for good: nothing resumes it after the restart.
        time.sleep(0.3)
        assert after.result("GetTask", {"id": task_id})["status"] == task["status"]
        assert after.error("CancelTask", {"id": task_id})["code"] == -32002
    finally:
        assert after.close() == 0
    assert integrity(state_db(server.cwd)) == "ok"
