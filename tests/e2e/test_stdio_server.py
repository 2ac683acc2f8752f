"""The stdio server as an editor sees it: the handshake, framing edge cases,
shutdown, and where it keeps its state."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cleveragents.a2a import methods
from tests.e2e.rawclient import RawServer, frame, unframe


@pytest.fixture
async def server(workspace):
    srv = await RawServer.start("--workspace", str(workspace))
    yield srv
    await srv.kill()


@pytest.fixture
async def ready(workspace):
    """A server past the handshake."""
    srv = await RawServer.start_initialized("--workspace", str(workspace))
    yield srv
    await srv.kill()


def handshake_frames(**params: object) -> bytes:
    """``initialize`` (id 0) and ``initialized``, for input written all at once."""
    return (frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"processId": None, "capabilities": {}, **params}})
            + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))


async def assert_alive(server: RawServer, msg_id: int = 999) -> None:
    response = await server.request(msg_id, "_cleveragents/health/check", {})
    assert response["result"]["status"] == "ok"


async def test_initialize_declares_a2a(server):
    response = await server.initialize()
    a2a = response["result"]["capabilities"]["experimental"]["a2a"]
    assert a2a["versions"] == ["1.0", "0.3"]
    assert a2a["methods"]["extension"] == methods.extension_method_names()
    assert set(a2a["methods"]["1.0"]) >= {"SendMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask"}
    assert "plan.create" in a2a["methods"]["deprecated"]
    card = a2a["agentCard"]
    assert card["name"] == "CleverAgents"
    (extension,) = card["capabilities"]["extensions"]
    assert extension["uri"] == "urn:cleveragents:extensions:v1"
    assert response["result"]["serverInfo"]["name"] == "cleveragents"


async def test_embedded_envelopes_in_params_round_trip(ready):
    server = ready
    metadata = {"inner": {"jsonrpc": "2.0", "id": 7, "method": "session.close", "params": {}},
                "_meta": {"jsonrpc": "2.0", "result": None, "id": 3}}
    created = await server.request(1, "session.create", {"metadata": metadata})
    session = await server.request(2, "session.get", {"session_id": created["result"]["session_id"]})
    assert session["result"]["metadata"] == metadata


async def test_non_ascii_answers_are_utf_8_and_their_length_counts_bytes(ready):
    """Answers are UTF-8 JSON (not ASCII-escaped): Content-Length must count bytes, or
    the next frame would be read from the wrong place."""
    server = ready
    metadata = {"note": "héllo ✓ 日本語 🚀"}
    created = await server.request(1, "session.create", {"metadata": metadata})
    session = await server.request(2, "session.get", {"session_id": created["result"]["session_id"]})
    assert session["result"]["metadata"] == metadata
    await assert_alive(server)


async def test_bad_frames_are_answered_and_the_server_stays_up(workspace):
    server = await RawServer.start("--workspace", str(workspace), "--max-message-size", "2048")
    try:
        server.send(b"Content-Type: application/json\r\n\r\n")  # no Content-Length
        missing = await server.read_message()
        assert missing["id"] is None and missing["error"]["code"] == -32700
        assert "Content-Length" in missing["error"]["message"]

        server.send(b"Content-Length: -5\r\n\r\n")
        negative = await server.read_message()
        assert negative["error"]["code"] == -32700 and "invalid Content-Length" in negative["error"]["message"]

        server.send(b"this is not a header\r\n\r\n")
        assert (await server.read_message())["error"]["code"] == -32700

        huge = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session.create",
                           "params": {"metadata": {"blob": "x" * 10_000}}}).encode()
        server.send(frame(huge))
        too_large = await server.read_message()
        assert too_large["error"]["code"] == -32600
        assert too_large["error"]["data"] == {"size": len(huge), "max_message_size": 2048}

        # The bad frames above came before initialize: framing errors are answered whatever
        # the lifecycle's state, and the handshake still works after them.
        assert "result" in await server.initialize()
        server.send(b"\r\n\r\n" + frame({"jsonrpc": "2.0", "id": 6, "method": "session.list"}))
        assert "result" in await server.response(6)
        await assert_alive(server)
    finally:
        await server.kill()


async def test_truncated_body_at_end_of_input_exits_cleanly(ready):
    server = ready
    await assert_alive(server, 1)
    server.send(b'Content-Length: 100\r\n\r\n{"jsonrpc": "2.0", "id": 2')
    server.close_stdin()
    code, rest, _ = await server.wait()
    assert code == 0
    assert rest == b""


async def test_headers_without_a_body_at_end_of_input(server):
    server.send(b"Content-Length: 10\r\n")
    server.close_stdin()
    code, rest, _ = await server.wait()
    assert code == 0 and rest == b""


async def test_shutdown_then_exit(server):
    await server.initialize()
    created = await server.request(1, "session.create", {})
    assert (await server.request(2, "shutdown"))["result"] is None
    refused = await server.request(3, "session.get", {"session_id": created["result"]["session_id"]})
    assert refused["error"]["code"] == -32600
    server.send_message({"jsonrpc": "2.0", "method": "exit"})
    code, rest, stderr = await server.wait()
    assert code == 0 and rest == b""
    assert b"Traceback" not in stderr


async def test_exit_without_shutdown_is_code_1(server):
    await server.initialize()
    server.send_message({"jsonrpc": "2.0", "method": "exit"})
    code, _, _ = await server.wait()
    assert code == 1


async def test_end_of_input_answers_in_flight_requests(server):
    # A piped script: everything at once, then EOF. Every request still gets its answer.
    server.send(handshake_frames())
    for i in range(1, 21):
        server.send_message({"jsonrpc": "2.0", "id": i, "method": "session.create", "params": {}})
    server.close_stdin()
    code, rest, _ = await server.wait()
    assert code == 0
    bodies = re.split(rb"Content-Length: \d+\r\n(?:[^\r\n]+\r\n)*\r\n", rest)[1:]
    answers = [json.loads(b) for b in bodies if b.strip()]
    assert all("result" in answer for answer in answers), answers
    assert sorted(answer["id"] for answer in answers) == list(range(21))  # 0: initialize


async def test_stdout_carries_only_frames_even_with_debug_logs(workspace):
    server = await RawServer.start("--workspace", str(workspace), "--log-level", "DEBUG")
    await server.initialize()
    await assert_alive(server)
    await server.request(2, "session.create", {})
    await server.request(3, "shutdown")
    server.send_message({"jsonrpc": "2.0", "method": "exit"})
    code, rest, stderr = await server.wait()
    assert code == 0 and rest == b""
    assert b"DEBUG" in stderr  # logs went to stderr; read_message checked stdout framing


async def test_unsupported_version_in_initialize_is_refused(server):
    response = await server.request(0, "initialize", {"processId": None, "capabilities": {},
                                                      "initializationOptions": {"a2aVersion": "9.0"}})
    assert response["error"]["code"] == -32009


async def test_version_from_initialize_applies_to_requests(workspace):
    server = await RawServer.start("--workspace", str(workspace))
    try:
        await server.initialize(initializationOptions={"a2aVersion": "0.3.0"})
        assert "result" in await server.request(1, "session.list", {})
    finally:
        await server.kill()


async def test_state_lives_under_the_client_root(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    server = await RawServer.start(cwd=tmp_path)
    try:
        await server.initialize(rootUri=root.as_uri())
        await server.request(1, "session.create", {})
        assert (root / ".cleveragents" / "state.db").is_file()
        assert not (tmp_path / ".cleveragents").exists()
    finally:
        await server.kill()


async def test_state_dir_and_memory_options(tmp_path, workspace):
    state = tmp_path / "elsewhere"
    server = await RawServer.start_initialized("--workspace", str(workspace), "--state-dir", str(state))
    try:
        assert "result" in await server.request(1, "session.create", {})
        assert (state / "state.db").is_file()
    finally:
        await server.kill()
    memory = await RawServer.start_initialized("--workspace", str(workspace), "--memory")
    try:
        health = await memory.request(1, "_cleveragents/health/check", {})
        assert health["result"]["store"]["backend"] == "memory"
    finally:
        await memory.kill()
    assert not (workspace / ".cleveragents").exists()


async def test_internal_errors_do_not_leak_tracebacks(tmp_path, workspace):
    # A state directory that is a file: the store cannot open; requests fail cleanly.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    server = await RawServer.start_initialized("--workspace", str(workspace), "--state-dir", str(blocker))
    try:
        response = await server.request(1, "session.create", {})
        error = response["error"]
        assert error["code"] == -32603
        assert "Traceback" not in json.dumps(error) and str(tmp_path) not in json.dumps(error)
        assert re.fullmatch(r"[0-9A-Z]{26}", error["data"]["error_id"])
    finally:
        server.close_stdin()
        code, _, stderr = await server.wait()
    assert error["data"]["error_id"].encode() in stderr
    assert code == 0


def test_console_scripts_are_installed():
    import shutil

    assert shutil.which("cleveragents-lsp") or Path(__import__("sys").executable).with_name("cleveragents-lsp").exists()


def test_stdin_from_dev_null_exits_cleanly(workspace):
    # Regression: epoll refuses /dev/null; the reader must fall back to a thread.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "cleveragents.transports.lsp", "--memory"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=30, cwd=workspace)
    assert done.returncode == 0 and done.stdout == b""


def test_stdin_from_a_regular_file_is_served(tmp_path, workspace):
    import subprocess
    import sys

    script = tmp_path / "requests.bin"
    script.write_bytes(handshake_frames() + frame({"jsonrpc": "2.0", "id": 1, "method": "session.create", "params": {}}))
    with script.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "cleveragents.transports.lsp", "--memory"],
                              stdin=stdin, capture_output=True, timeout=30, cwd=workspace)
    assert done.returncode == 0
    initialized, created = unframe(done.stdout)
    assert initialized["id"] == 0 and "capabilities" in initialized["result"]
    assert created["id"] == 1 and created["result"]["status"] == "created"


async def test_exit_right_behind_requests_exits_without_a_traceback(server):
    # Regression: cancelling an in-flight request on `exit` used to cancel the
    # services' startup too, and the server crashed.
    server.send_message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
    server.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    server.send_message({"jsonrpc": "2.0", "id": 1, "method": "_cleveragents/health/check"})
    server.send_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    server.send_message({"jsonrpc": "2.0", "method": "exit"})
    code, _, stderr = await server.wait()
    assert code in (0, 1)
    assert b"Traceback" not in stderr and b"CancelledError" not in stderr


async def test_initialize_answer_matches_what_pygls_would_choose(workspace):
    # The early answer picks the position encoding the way pygls's workspace does.
    from lsprotocol import types
    from pygls.capabilities import ServerCapabilitiesBuilder

    from cleveragents.transports.lsp.handshake import position_encoding

    for offered in (None, [], ["utf-8"], ["utf-32", "utf-16"], ["latin-1", "utf-8"], ["bogus"]):
        general = None if offered is None else types.GeneralClientCapabilities(position_encodings=offered)
        caps = types.ClientCapabilities(general=general)
        raw = {} if offered is None else {"general": {"positionEncodings": offered}}
        assert position_encoding(raw) == ServerCapabilitiesBuilder.choose_position_encoding(caps)
    server = await RawServer.start("--workspace", str(workspace))
    try:
        response = await server.initialize(capabilities={"general": {"positionEncodings": ["utf-8"]}})
        assert response["result"]["capabilities"]["positionEncoding"] == "utf-8"
    finally:
        await server.kill()


async def test_early_and_ordinary_initialize_answers_agree(workspace):
    params = {"processId": None, "capabilities": {"general": {"positionEncodings": ["utf-32"]}},
              "initializationOptions": {"a2aVersion": "1.0"}}
    early = await RawServer.start("--workspace", str(workspace))
    late = await RawServer.start("--workspace", str(workspace), "--memory")
    try:
        first = await early.request(1, "initialize", params)
        await late.request(0, "session.list", {})  # initialize is not the first message here
        second = await late.request(1, "initialize", params)
        assert first == second
    finally:
        await early.kill()
        await late.kill()


def test_agents_serve_runs_the_same_server(workspace):
    import subprocess
    import sys

    agents = [sys.executable, "-m", "cleveragents.cli.main"]
    body = handshake_frames() + frame({"jsonrpc": "2.0", "id": 1, "method": "_cleveragents/health/check"})
    served = subprocess.run([*agents, "serve", "--memory"], input=body, capture_output=True, timeout=30, cwd=workspace)
    assert served.returncode == 0
    initialized, health = unframe(served.stdout)
    assert initialized["id"] == 0 and "capabilities" in initialized["result"]
    assert health["id"] == 1 and health["result"]["status"] == "ok"
    bare = subprocess.run(agents, capture_output=True, timeout=30)
    assert bare.returncode == 2 and b"serve" in bare.stderr


async def test_the_server_exits_when_its_client_process_dies(workspace):
    import asyncio
    import subprocess
    import sys

    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = await RawServer.start("--workspace", str(workspace))
    try:
        await server.request(0, "initialize", {"processId": parent.pid, "capabilities": {}})
        await assert_alive(server)
        parent.kill()
        parent.wait()
        code = await asyncio.wait_for(server.proc.wait(), 15)
        assert code == 0
    finally:
        parent.kill()
        await server.kill()


async def test_a_cancelled_request_gets_32800_and_the_server_carries_on(server):
    # Cancelled while it waits for the services to load: the load itself must go on. The
    # handshake goes in the same write, so the services are still loading.
    server.send(handshake_frames() + frame({"jsonrpc": "2.0", "id": 1, "method": "session.create", "params": {}})
                + frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}))
    assert "result" in await server.response(0)
    cancelled = await server.response(1)
    assert cancelled["error"]["code"] == -32800
    listed = await server.request(2, "session.list", {})
    assert listed["result"]["total"] == 0
    await assert_alive(server)


async def test_acknowledged_sessions_survive_sigkill(workspace):
    server = await RawServer.start_initialized("--workspace", str(workspace))
    created = [(await server.request(i, "session.create", {}))["result"]["session_id"] for i in range(1, 21)]
    await server.request(21, "session.close", {"session_id": created[0]})
    server.proc.kill()  # SIGKILL: no shutdown, no checkpoint
    await server.proc.wait()
    again = await RawServer.start_initialized("--workspace", str(workspace))
    try:
        listed = (await again.request(1, "session.list", {"limit": 100}))["result"]
        assert sorted(s["session_id"] for s in listed["sessions"]) == sorted(created)
        assert (await again.request(2, "session.get", {"session_id": created[0]}))["result"]["status"] == "closed"
    finally:
        await again.kill()
