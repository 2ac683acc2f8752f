"""Requests answered before the LSP layer has loaded: the services load first after
``initialize``, so an A2A request that needs nothing of the LSP layer is answered by
the entry point, and whatever follows goes to the pygls server in its order."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from cleveragents.infra.config_file import USER_CONFIG_ENV, workspace_config_path
from tests.e2e.agent_server import AGENTS
from tests.e2e.rawclient import RawServer, frame, unframe


def early_log(method: str) -> str:
    return f"answering {method} before the LSP layer has loaded"


def request(msg_id: int, method: str, params: object = None) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {} if params is None else params})


def notification(method: str) -> bytes:
    return frame({"jsonrpc": "2.0", "method": method, "params": {}})


async def run_to_shutdown(server: RawServer, data: bytes, shutdown_id: int) -> tuple[list[dict], str]:
    """Writes ``data`` (ending with a shutdown request) at once, then ``exit`` once
    shutdown is answered; every message read, and stderr."""
    server.send(data)
    await server.response(shutdown_id)
    server.send(notification("exit"))
    server.close_stdin()
    code, rest, err = await server.wait()
    assert code == 0, err.decode()[-2000:]
    return server.messages + unframe(rest), err.decode()


async def test_an_a2a_request_after_initialize_is_answered_before_pygls_loads(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    # No --workspace: the workspace is the one initialize names, for early answers too.
    server = await RawServer.start("--log-level", "DEBUG", cwd=elsewhere)
    try:
        messages, err = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}, "rootUri": workspace.as_uri()})
            + notification("initialized")
            + request(1, "_cleveragents/health/check")
            + request(2, "session.create", {"metadata": {"n": 1}})
            + request(3, "ListTasks", {})
            + request(4, "ListTasks", {"workDoneToken": "t"})  # progress is the pygls server's
            + request(5, "shutdown")
        ), 5)
    finally:
        await server.kill()
    answers = [m for m in messages if "method" not in m]
    assert sorted(m["id"] for m in answers) == [0, 1, 2, 3, 4, 5]  # each once
    by_id = {m["id"]: m for m in answers}
    assert by_id[1]["result"]["status"] == "ok"
    assert by_id[2]["result"]["session_id"]
    assert by_id[3]["result"]["tasks"] == by_id[4]["result"]["tasks"] == []
    assert by_id[5]["result"] is None
    assert early_log("session.create") in err and early_log("ListTasks") in err
    assert err.count(early_log("ListTasks")) == 1  # the one with a progress token waited
    # The store is the workspace's from initialize, not the process's directory.
    assert (workspace / ".cleveragents").is_dir() and not (elsewhere / ".cleveragents").exists()


async def test_a_first_message_is_answered_before_pygls_loads(workspace, tmp_path, monkeypatch):
    """An editor's first SendMessage waits for the services, not for the LSP layer:
    the task it starts is the same task the pygls server then finds."""
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    server = await RawServer.start("--log-level", "DEBUG", "--workspace", str(workspace))
    message = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}}
    try:
        server.send(request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
                    + request(1, "SendMessage", message))
        sent = await server.response(1)
        task = sent["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", sent
        # didOpen ends the early phase: the pygls server answers from here on.
        server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (workspace / "README.md").as_uri(), "languageId": "markdown", "version": 1, "text": "hello\n"}}}))
        got = await server.request(2, "GetTask", {"id": task["id"]})
        assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED", got
        messages, err = await run_to_shutdown(server, request(3, "shutdown"), 3)
    finally:
        await server.kill()
    assert early_log("SendMessage") in err
    assert early_log("GetTask") not in err


def stream_of(messages: list[dict], msg_id: int) -> tuple[list[dict], dict]:
    """The notifications that carried the stream of request ``msg_id``, and its response;
    every notification must come before the response."""
    items, response = [], None
    for message in messages:
        if message.get("method", "").startswith("task/") and message["params"]["requestId"] == msg_id:
            assert response is None, f"a stream item after the response: {message}"
            items.append(message)
        elif "method" not in message and message.get("id") == msg_id:
            response = message
    assert response is not None, f"no response to {msg_id}"
    return items, response


async def test_a_first_streamed_message_is_answered_before_pygls_loads(workspace, tmp_path, monkeypatch):
    """The editors send their chat messages with ``message/stream``: each item is a
    notification on the same pipe, then the response, before the LSP layer is up too."""
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    server = await RawServer.start("--log-level", "DEBUG", "--workspace", str(workspace))
    try:
        messages, err = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
            + request(1, "message/stream", {"message": {
                "kind": "message", "role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hello"}]}})
            + request(2, "SendStreamingMessage", {"message": {
                "role": "ROLE_USER", "messageId": "m2", "parts": [{"text": "hello"}]}})
            + request(3, "shutdown")
        ), 3)
    finally:
        await server.kill()
    assert early_log("message/stream") in err and early_log("SendStreamingMessage") in err
    for msg_id in (1, 2):
        items, response = stream_of(messages, msg_id)
        assert items, f"stream {msg_id} had no items before its response"
        assert "result" in response, response
    assert stream_of(messages, 1)[1]["result"]["status"]["state"] == "completed"
    assert stream_of(messages, 2)[1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


SLOW_AGENT = ("import sys; sys.path.insert(0, sys.argv[1]); from slow_agent import count_slowly; "
              "from cleveragents import A2A, Agent; "
              "A2A(agent=Agent(name='Slow', handler=count_slowly)).serve_stdio(memory=True, log_level='DEBUG')")


async def test_streams_started_early_go_on_after_pygls_takes_over_and_cancel(tmp_path):
    """A stream started while the LSP layer loads outlives that phase: its items keep
    coming, and a ``$/cancelRequest`` sent later reaches it and cancels its task."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SLOW_AGENT, str(AGENTS), cwd=tmp_path,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    server = RawServer(proc)
    message = {"role": "ROLE_USER", "parts": [{"text": "count"}]}
    try:
        server.send(request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
                    + request(1, "SendStreamingMessage", {"message": {**message, "messageId": "m1"}})
                    + request(2, "SendStreamingMessage", {"message": {**message, "messageId": "m2"}}))
        while not any(m.get("method") == "task/artifactUpdate" and m["params"]["requestId"] == 2
                      for m in server.messages):
            await server.read_message()
        server.send(frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}))
        while not {1, 2} <= {m.get("id") for m in server.messages if "method" not in m}:
            await server.read_message()  # the two answers, in either order
        tasks = (await server.request(3, "ListTasks", {}))["result"]["tasks"]
        messages, err = await run_to_shutdown(server, request(4, "shutdown"), 4)
    finally:
        await server.kill()
    assert early_log("SendStreamingMessage") in err
    items, finished = stream_of(messages, 1)
    chunks = [i for i in items if i["method"] == "task/artifactUpdate"]
    assert len(chunks) == 5 and finished["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    _, cancelled = stream_of(messages, 2)
    assert cancelled["error"]["code"] == -32800, cancelled
    assert [m.get("id") for m in messages if "method" not in m].count(2) == 1  # answered once
    assert sorted(t["status"]["state"] for t in tasks) == ["TASK_STATE_CANCELED", "TASK_STATE_COMPLETED"]


async def test_a_session_made_early_is_there_for_the_pygls_server(workspace):
    server = await RawServer.start("--workspace", str(workspace))
    try:
        server.send(request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
                    + request(1, "session.create", {}))
        created = await server.response(1)
        # didOpen ends the early phase: the pygls server takes this and what follows.
        server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (workspace / "README.md").as_uri(), "languageId": "markdown", "version": 1, "text": "hello\n"}}}))
        session = await server.request(2, "session.get", {"session_id": created["result"]["session_id"]})
        assert session["result"]["session_id"] == created["result"]["session_id"]
    finally:
        await server.kill()


async def test_services_that_fail_to_start_are_an_error_answer_and_lsp_goes_on(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    other = tmp_path / "other"
    other.mkdir()
    config = workspace_config_path(other)
    config.parent.mkdir(parents=True)
    config.write_text("[defaults]\nmax_terminal_tasks = [\n")  # not TOML
    server = await RawServer.start(cwd=workspace)
    try:
        messages, _ = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}, "rootUri": other.as_uri()})
            + notification("initialized") + request(1, "_cleveragents/health/check")
            + request(2, "shutdown")
        ), 2)
    finally:
        await server.kill()
    by_id = {m["id"]: m for m in messages if "method" not in m}
    assert set(by_id) == {0, 1, 2}
    error = by_id[1]["error"]
    assert str(config) in error["message"] + str(error.get("data"))
    assert by_id[2]["result"] is None


async def test_a_request_cancelled_while_the_services_load_is_answered_once(workspace):
    server = await RawServer.start("--workspace", str(workspace))
    try:
        messages, err = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
            + request(1, "_cleveragents/diagnostics/run", {"checks": ["workspace"]})
            + frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}})
            + request(2, "_cleveragents/health/check")
            + request(3, "shutdown")
        ), 3)
    finally:
        await server.kill()
    answers = [m for m in messages if "method" not in m]
    assert sorted(m["id"] for m in answers) == [0, 1, 2, 3]
    assert next(m for m in answers if m["id"] == 1)["error"]["code"] == -32800
    assert next(m for m in answers if m["id"] == 2)["result"]["status"] == "ok"
    assert "unknown message id" not in err  # the cancel reached its request


async def test_a_client_slow_to_write_its_first_message_is_served(workspace, tmp_path, monkeypatch):
    """The services load while the server waits for a late first message; the early
    answers are the same once it comes."""
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    server = await RawServer.start("--log-level", "DEBUG", "--workspace", str(workspace))
    try:
        await asyncio.sleep(0.5)
        messages, err = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
            + request(1, "_cleveragents/health/check") + request(2, "session.create", {})
            + request(3, "shutdown")
        ), 3)
    finally:
        await server.kill()
    by_id = {m["id"]: m for m in messages if "method" not in m}
    assert set(by_id) == {0, 1, 2, 3}
    assert by_id[1]["result"]["status"] == "ok"
    assert by_id[2]["result"]["session_id"]


def test_the_entry_point_does_not_import_pygls_to_answer_initialize():
    """Only light modules load before the first answers; pygls comes last."""
    code = ("import sys, cleveragents.transports.lsp.main, cleveragents.transports.lsp.early; "
            "print(any(m.split('.')[0] in ('pygls', 'lsprotocol', 'pydantic') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_the_entry_points_configuration_check_does_not_import_the_actors():
    """``run_stdio`` checks the configuration before its first answer: that takes the
    composition root, not the actors or the models behind it."""
    code = ("import sys; from cleveragents.config import Settings; "
            "from cleveragents.container.configured import configuration_problem; "
            "configuration_problem(Settings()); "
            "print(sorted(m for m in sys.modules if m.startswith(('cleveragents.infra.actors', 'cleveragents.app.', "
            "'cleveragents.a2a.facade', 'pydantic'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr



EARLY_HEALTH_LOG = "answering a health check before the services are up"


async def test_a_health_check_before_the_services_are_up_is_answered_as_they_would(workspace, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    server = await RawServer.start("--log-level", "DEBUG", "--workspace", str(workspace))
    try:
        messages, err = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
            + request(1, "_cleveragents/health/check")
            + request(2, "ListTasks", {})  # needs the services: the health check after it has them
            + request(3, "_cleveragents/health/check")
            + request(4, "shutdown")
        ), 4)
    finally:
        await server.kill()
    by_id = {m["id"]: m for m in messages if "method" not in m}
    early, later = by_id[1]["result"], by_id[3]["result"]
    assert EARLY_HEALTH_LOG in err  # the first came from the store's file opened on its own
    assert set(early) == set(later) == {"status", "version", "uptime_seconds", "started_at", "store"}
    assert early["status"] == later["status"] == "ok"
    assert early["store"] == later["store"] == {"ok": True, "backend": "sqlite", "schema_version": 5}
    assert early["version"] == later["version"]
    assert early["started_at"] == later["started_at"]  # one start: the services go on from it
    assert later["uptime_seconds"] >= early["uptime_seconds"]
    assert (workspace / ".cleveragents" / "state.db").is_file()


async def test_a_configuration_file_leaves_the_health_check_to_the_services(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    config = workspace_config_path(workspace)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[defaults]\nmax_terminal_tasks = 50\n")
    server = await RawServer.start("--log-level", "DEBUG", "--workspace", str(workspace))
    try:
        messages, err = await run_to_shutdown(server, (
            request(0, "initialize", {"processId": None, "capabilities": {}}) + notification("initialized")
            + request(1, "_cleveragents/health/check") + request(2, "shutdown")
        ), 2)
    finally:
        await server.kill()
    by_id = {m["id"]: m for m in messages if "method" not in m}
    assert by_id[1]["result"]["status"] == "ok"
    assert EARLY_HEALTH_LOG not in err
