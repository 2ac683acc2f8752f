"""SIGTERM, SIGHUP and SIGINT to the stdio server: what an editor sends when it stops a
server that did not exit (Neovim's forced stop, a closing terminal, Ctrl-C by hand).

The server stops as it does at the end of its input: its requests are cancelled, its
services closed, and what it made in the temporary directory (the in-memory store's
scratch directory, a sandboxed command's run directory) is removed. Then the process
ends by the signal it received, as one the signal ended does: the parent sees the
signal, not an exit code (Neovim warns of any exit code but 0; ``test_nvim_plugin.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from cleveragents.app.plans import RESTART_REASON
from cleveragents.infra.process_tmp import PREFIX, SWEEP_MIN_AGE
from tests.e2e.agent_client.test_framing_detection import ACP_INITIALIZE
from tests.e2e.rawclient import TIMEOUT, RawServer
from tests.e2e.test_plans_stdio import PLAN, Client, python_on_path, sleeper  # noqa: F401  (fixtures)
from tests.listening import listening

SEND = {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hello"}]}}
SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's TMPDIR: empty, and no other process's."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    return directory


async def status_after_restart(workspace: Path, plan_id: str) -> dict:
    """The plan's status as the next server on ``workspace`` finds it."""
    server = await RawServer.start_initialized("--workspace", str(workspace))
    try:
        return await Client(server, workspace).status(plan_id)
    finally:
        await server.kill()


async def stopped_by(server: RawServer, signum: int) -> tuple[int, str]:
    server.proc.send_signal(signum)
    try:
        code, _, err = await server.wait()
    finally:
        await server.kill()
    return code, err.decode(errors="replace")


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("settle", [0.0, 1.5], ids=["at the first answer", "serving"])
async def test_a_signalled_server_removes_its_scratch_and_exits(tmp_path, private_tmp, signum, settle):
    """The first answer comes before pygls has loaded (``lsp/early.py``): a signal then
    must close the services as surely as one after the hand-over."""
    server = await RawServer.start_initialized("--memory", "--workspace", str(tmp_path))
    answer = await server.request(1, "SendMessage", SEND)
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
    assert list(private_tmp.iterdir()), "the in-memory store made no scratch directory: nothing is tested"
    if settle:
        health = await server.request(2, "_cleveragents/health/check", {})
        assert "result" in health, health
        await asyncio.sleep(settle)
    code, err = await stopped_by(server, signum)
    assert code == -signum, err
    assert list(private_tmp.iterdir()) == [], err
    assert "Traceback" not in err, err


async def test_agents_serve_stops_the_same_way(tmp_path, private_tmp):
    """`agents serve` is the same server under the CLI: an editor may start it instead."""
    agents = str(Path(sys.executable).with_name("agents"))
    server = await RawServer.start("serve", "--memory", "--workspace", str(tmp_path), cwd=tmp_path, command=[agents])
    assert "result" in await server.initialize()
    answer = await server.request(1, "SendMessage", SEND)
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
    assert list(private_tmp.iterdir()), "the in-memory store made no scratch directory: nothing is tested"
    code, err = await stopped_by(server, signal.SIGTERM)
    assert code == -signal.SIGTERM, err
    assert list(private_tmp.iterdir()) == [], err


async def test_the_agent_client_face_stops_the_same_way(tmp_path, private_tmp):
    server = await RawServer.start("--memory", cwd=tmp_path)
    proc = server.proc
    assert proc.stdin is not None and proc.stdout is not None
    for message in (ACP_INITIALIZE, {"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                     "params": {"cwd": str(tmp_path), "mcpServers": []}}):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), TIMEOUT))
        assert "result" in answer, answer
    assert list(private_tmp.iterdir()), "the in-memory store made no scratch directory: nothing is tested"
    code, err = await stopped_by(server, signal.SIGTERM)
    assert code == -signal.SIGTERM, err
    assert list(private_tmp.iterdir()) == [], err


@pytest.mark.parametrize(("stop", "wait"), [("SIGTERM", False), ("SIGTERM", True), ("end of input", False)])
async def test_a_stop_during_a_sandboxed_command_ends_it_and_interrupts_the_plan(
        tmp_path, private_tmp, sleeper, stop, wait):  # noqa: F811
    """A plan's command is running in the sandbox (the execute answered at once, or
    still waiting for the plan): the stop ends the command and removes its run
    directory (its overlay holds what it wrote). Nobody cancelled the plan: the next
    start finds it interrupted, to be executed again, as after a crash."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    server = await RawServer.start_initialized("--workspace", str(workspace))
    client = Client(server, workspace)
    plan_id = await client.use("run", {"command": sleeper.command})
    if wait:
        client.send(PLAN + "execute", {"plan_id": plan_id})
    else:
        await client.result(PLAN + "execute", plan_id=plan_id, wait=False)
    await sleeper.started()
    assert list(private_tmp.glob("cleveragents-process-*/run-*")), list(private_tmp.rglob("*"))
    if stop == "SIGTERM":
        code, err = await stopped_by(server, signal.SIGTERM)
        assert code == -signal.SIGTERM, err
    else:
        server.close_stdin()
        code, _, err_bytes = await server.wait()
        err = err_bytes.decode(errors="replace")
        assert code == 0, err
    assert await sleeper.gone(timeout=5), "the plan's command outlived the server"
    assert list(private_tmp.iterdir()) == [], err
    assert "Traceback" not in err, err

    status = await status_after_restart(workspace, plan_id)
    assert (status["phase"], status["state"], status["reason"]) == ("execute", "interrupted", RESTART_REASON), status
    assert "execute" in status["allowed_actions"], status


async def test_the_directory_of_a_sigkilled_server_is_removed_by_the_next(tmp_path, private_tmp):
    """SIGKILL gives a server no chance to clean up: the next server to need a
    temporary directory removes what the dead one left, once it is a minute old."""
    server = await RawServer.start_initialized("--memory", "--workspace", str(tmp_path))
    await server.request(1, "SendMessage", SEND)
    (left,) = private_tmp.iterdir()
    assert list(left.iterdir()), "the dead server's scratch is not in its directory: nothing is tested"
    await server.kill()
    assert left.is_dir()
    old = time.time() - 2 * SWEEP_MIN_AGE
    os.utime(left, (old, old))

    server = await RawServer.start_initialized("--memory", "--workspace", str(tmp_path))
    try:
        answer = await server.request(1, "SendMessage", SEND)
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
        assert not left.exists()
        (mine,) = private_tmp.iterdir()
        assert mine.name.startswith(PREFIX) and list(mine.iterdir())
    finally:
        await server.kill()


async def test_sigterm_during_a_blocking_execute_over_http_interrupts_the_plan(tmp_path, sleeper):  # noqa: F811
    """The HTTP server's SIGTERM: uvicorn gives running requests 5 s, then the services
    close; the plan a request was executing comes back interrupted, as on stdio."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    argv = [sys.executable, "-m", "cleveragents.transports.http", "--workspace", str(workspace), "--port", "0",
            "--auth-token", "t"]
    with listening(argv, clean_exit=True) as served:
        async with httpx.AsyncClient(base_url=served.url, timeout=60, headers={"Authorization": "Bearer t"}) as http:
            async def call(method: str, **params: object) -> dict:
                answer = (await http.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                         "params": params})).json()
                assert "result" in answer, answer
                return answer["result"]

            plan_id = (await call(PLAN + "use", action_name="run", arguments={"command": sleeper.command},
                                  automation_profile="supervised"))["plan_id"]
            executing = asyncio.ensure_future(call(PLAN + "execute", plan_id=plan_id))
            await sleeper.started()
            served.process.terminate()
            await asyncio.to_thread(served.process.wait, 30)
            with contextlib.suppress(httpx.HTTPError, ValueError, AssertionError):  # stopped: no JSON-RPC answer
                await executing
    assert await sleeper.gone(timeout=5), "the plan's command outlived the server"

    status = await status_after_restart(workspace, plan_id)
    assert (status["phase"], status["state"], status["reason"]) == ("execute", "interrupted", RESTART_REASON), status
