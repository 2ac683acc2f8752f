"""`agents serve --http` on PostgreSQL: real server processes on a real database, driven
by the official SDK's client. What one process answered is committed: another process
on the same database (chosen there through the environment) serves it after the first
is gone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from a2a.types import a2a_pb2 as pb

from tests.e2e.test_http_sdk import client_for, collect, message
from tests.listening import Listening, listening

psycopg = pytest.importorskip("psycopg")

AGENTS = Path(sys.executable).with_name("agents")
TOKEN = "pg-test-token"


@contextmanager
def serving(workspace: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Listening]:
    """A real ``agents serve --http`` process, once it listens."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    with listening([str(AGENTS), "serve", "--http", "--host", "127.0.0.1", "--port", "0", "--auth-token", TOKEN,
                    "--workspace", str(workspace), *args], env={**clean, **(env or {})}) as served:
        yield served


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("kept in postgres\n")
    return root


async def test_a_server_on_postgresql_answers_and_another_serves_what_it_stored(ws, postgres_url):
    with serving(ws, "--store", postgres_url) as server:
        async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            client = await client_for(server, http, "JSONRPC")
            (sent,) = await collect(client.send_message(message("fs.read path=README.md")))
            task = sent.task
            assert task.status.state == pb.TaskState.TASK_STATE_COMPLETED
            assert "kept in postgres" in task.artifacts[0].parts[0].text
    with psycopg.connect(postgres_url) as raw:
        assert raw.execute("SELECT state FROM tasks WHERE task_id = %s", (task.id,)).fetchone() == ("completed",)

    # A second process, its store chosen through the environment, on another workspace.
    other = ws.parent / "other"
    other.mkdir()
    with serving(other, env={"CLEVERAGENTS_STORE": postgres_url}) as server:
        async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            client = await client_for(server, http, "HTTP+JSON")
            got = await client.get_task(pb.GetTaskRequest(id=task.id))
            assert got.status.state == pb.TaskState.TASK_STATE_COMPLETED and len(got.history) == 2
            listed = await client.list_tasks(pb.ListTasksRequest(page_size=10))
            assert [t.id for t in listed.tasks] == [task.id]


def test_an_unreachable_database_stops_the_server_with_its_address(ws):
    started = time.monotonic()
    done = subprocess.run(
        [str(AGENTS), "serve", "--http", "--host", "127.0.0.1", "--port", "0", "--auth-token", TOKEN,
         "--workspace", str(ws), "--store", "postgresql://someone:hunter2@127.0.0.1:1/nothing"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "can't open the PostgreSQL store at postgresql://someone@127.0.0.1:1/nothing" in done.stderr
    assert "hunter2" not in done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(("args", "said"), [
    (("--store", "mysql://db/x"), "store must be a PostgreSQL URL"),
    (("--store", "postgresql://db/x", "--memory"), "memory and store exclude each other"),
])
def test_a_store_that_cant_be_used_is_one_line_and_exit_2(ws, args, said):
    done = subprocess.run([str(AGENTS), "serve", "--http", "--port", "0", "--auth-token", TOKEN,
                           "--workspace", str(ws), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr


@contextmanager
def slow_replica(workspace: Path, url: str, seconds: float = 60, **env_extra: str) -> Iterator[Listening]:
    """A real process serving the slow agent (answers after ``seconds``) on ``url``'s
    database, sweeping every 0.5 s."""
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    env.update(CLEVERAGENTS_STORE=url, CLEVERAGENTS_REPLICA_SWEEP_SECONDS="0.5", **env_extra)
    agent = Path(__file__).parent / "agents" / "replica_agent.py"
    with listening([sys.executable, str(agent), TOKEN, str(workspace), str(seconds)], kill=True, env=env) as served:
        yield served


async def test_a_replica_killed_mid_task_loses_nothing_and_its_task_fails_on_a_peer(tmp_path, postgres_url):
    with slow_replica(tmp_path / "a", postgres_url) as a, slow_replica(tmp_path / "b", postgres_url) as b:
        async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            on_a = await client_for(a, http, "JSONRPC")
            request = message("take your time")
            request.configuration.return_immediately = True
            (sent,) = await collect(on_a.send_message(request))
            task_id = sent.task.id  # acknowledged: A runs it
            on_b = await client_for(b, http, "JSONRPC")
            await asyncio.sleep(1.5)  # B's sweeps leave a live peer's task alone
            assert (await on_b.get_task(pb.GetTaskRequest(id=task_id))).status.state in (
                pb.TaskState.TASK_STATE_SUBMITTED, pb.TaskState.TASK_STATE_WORKING)

            a.process.kill()  # SIGKILL: no shutdown, no last write
            a.process.wait(timeout=15)
            deadline = time.monotonic() + 10
            while True:
                got = await on_b.get_task(pb.GetTaskRequest(id=task_id))
                if got.status.state == pb.TaskState.TASK_STATE_FAILED or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert got.status.state == pb.TaskState.TASK_STATE_FAILED
            assert "stopped while this task was running" in got.status.message.parts[0].text
            assert [m.parts[0].text for m in got.history][0] == "take your time"


async def test_cancel_task_on_one_replica_cancels_the_run_on_another(tmp_path, postgres_url):
    from cleveragents.app.peer_cancel import PEER_CANCEL_WAIT

    with (slow_replica(tmp_path / "a", postgres_url, seconds=4) as a,
          slow_replica(tmp_path / "b", postgres_url, seconds=4) as b):
        async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            on_a, on_b = await client_for(a, http, "JSONRPC"), await client_for(b, http, "HTTP+JSON")
            request = message("cancel me elsewhere")
            request.configuration.return_immediately = True
            (sent,) = await collect(on_a.send_message(request))  # A runs it, for 4 s
            started = time.monotonic()
            canceled = await on_b.cancel_task(pb.CancelTaskRequest(id=sent.task.id))
            assert canceled.status.state == pb.TaskState.TASK_STATE_CANCELED
            assert time.monotonic() - started < PEER_CANCEL_WAIT  # A cancelled it, B didn't give up on A
            # Had A's run gone on, its answer would have replaced the cancel by now.
            await asyncio.sleep(4.5)
            for client in (on_a, on_b):
                got = await client.get_task(pb.GetTaskRequest(id=sent.task.id))
                assert got.status.state == pb.TaskState.TASK_STATE_CANCELED, got.status


async def test_push_notifications_are_sent_once_not_once_per_replica(tmp_path, postgres_url):
    from tests.e2e.test_published_agents import Webhook

    hook = Webhook()
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    allow = {"CLEVERAGENTS_PUSH_ALLOWED_NETWORKS": "127.0.0.1/32"}
    try:
        with (slow_replica(tmp_path / "a", postgres_url, seconds=0.5, **allow) as a,
              slow_replica(tmp_path / "b", postgres_url, seconds=0.5, **allow)):
            async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                on_a = await client_for(a, http, "JSONRPC")
                request = message("tell the hook")
                request.configuration.task_push_notification_config.url = hook.url("/hook")
                request.configuration.task_push_notification_config.token = "hook-token"
                (sent,) = await collect(on_a.send_message(request))
                assert sent.task.status.state == pb.TaskState.TASK_STATE_COMPLETED
                posts = hook.wait_for("/hook", 1)
                await asyncio.sleep(1.5)  # time for any second sender to post too
        bodies = [json.dumps(body, sort_keys=True) for path, _, body in hook.posts if path == "/hook"]
        assert bodies and len(bodies) == len(set(bodies)), bodies
        completed = [b for b in bodies if "TASK_STATE_COMPLETED" in b or '"completed"' in b]
        assert len(completed) == 1, bodies
        assert posts[0][0].get("x-a2a-notification-token") == "hook-token"
    finally:
        hook.shutdown()
        hook.server_close()


async def _sse(client: httpx.AsyncClient, url: str, task_id: str, last_event_id: str | None = None):
    """(SSE id, item) of each event of a SubscribeToTask stream, to its end."""
    from tests.contract.runners import sse_messages

    headers = {"Accept": "text/event-stream", "A2A-Version": "1.0", "Authorization": f"Bearer {TOKEN}",
               **({"Last-Event-ID": last_event_id} if last_event_id else {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    async with client.stream("POST", url + "/a2a", json=body, headers=headers) as response:
        async for _, event_id, data in sse_messages(response):
            yield event_id, json.loads(data)["result"]


async def test_a_stream_started_on_one_replica_resumes_on_another(tmp_path, postgres_url):
    with (slow_replica(tmp_path / "a", postgres_url, seconds=3) as a,
          slow_replica(tmp_path / "b", postgres_url, seconds=3) as b):
        async with httpx.AsyncClient(timeout=15, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            on_a = await client_for(a, http, "JSONRPC")
            request = message("stream me")
            request.configuration.return_immediately = True
            (sent,) = await collect(on_a.send_message(request))
            task_id = sent.task.id

            on_a_stream = _sse(http, a.url, task_id)
            seen_on_a = [await anext(on_a_stream) for _ in range(4)]  # the task, then updates
            resume_from = seen_on_a[2][0]
            on_b = [event async for event in _sse(http, b.url, task_id, resume_from)]
            seen_on_a += [event async for event in on_a_stream]

    after = [event for event in seen_on_a if event[0] > resume_from]
    assert [event_id for event_id, _ in on_b] == [event_id for event_id, _ in after]  # none lost, none twice
    assert on_b == after
    assert on_b[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert sum("artifactUpdate" in item for _, item in on_b) >= 5


def test_agents_store_migrate_brings_a_database_up_once(tmp_path, postgres_url):
    from cleveragents.infra.store.postgres_schema import MIGRATIONS

    clean = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    for env in ({}, {"CLEVERAGENTS_STORE": postgres_url}):  # first applies, then finds nothing to do
        args = [] if env else ["--store", postgres_url]
        done = subprocess.run([str(AGENTS), "store", "migrate", *args], capture_output=True, text=True,
                              timeout=60, env={**clean, **env}, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == f"schema version {len(MIGRATIONS)}\n", done.stderr
    with psycopg.connect(postgres_url) as raw:
        assert raw.execute("SELECT COUNT(*) FROM schema_migrations").fetchone() == (len(MIGRATIONS),)
    for args, code, said in ((["--store", "postgresql://x:pw@127.0.0.1:1/db"], 1, "can't open the PostgreSQL store"),
                             (["--store", "mysql://db"], 2, "not a PostgreSQL URL"), ([], 2, "name the database")):
        done = subprocess.run([str(AGENTS), "store", "migrate", *args], capture_output=True, text=True, timeout=60,
                              env=clean, cwd=tmp_path)
        assert done.returncode == code and said in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert ":pw@" not in done.stderr
