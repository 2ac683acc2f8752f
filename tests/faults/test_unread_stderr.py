"""A client that never reads the server's stderr (a script that pipes it and reads only
stdout) must not stop the server: once the pipe is full, the log lines and prints
that can't be written must not hold up the answers, nor the exit."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SERVER_COMMAND
from tests.fuzz.stdio_client import frame, handshake, read_messages
from tests.processes import stop

HEALTH = "_cleveragents/health/check"
# Each is answered by nothing but a warning line on stderr: together more than a pipe
# holds (64 KiB).
BAD_NOTIFICATIONS = 1000
BAD_OPEN = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": [1]}}
PRINTING_AGENT = Path(__file__).parents[1] / "e2e" / "agents" / "printing_agent.py"
STDERR_AGENT = Path(__file__).parents[1] / "e2e" / "agents" / "stderr_agent.py"
SEND = {"jsonrpc": "2.0", "id": "send", "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}}}
WAIT_SECONDS = 20


def _serve_without_reading_stderr(command: list[str], cwd: Path, *middle: bytes) -> tuple[list[dict[str, Any]], str]:
    """``initialize``, ``middle``, a health check, ``shutdown`` and ``exit``, with stderr
    never read until the server has exited: the answers by id, and then stderr."""
    proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    messages: queue.Queue[Any] = queue.Queue()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    reader = threading.Thread(target=read_messages, args=(proc.stdout, messages.put), daemon=True)
    reader.start()
    frames = [handshake("init"),
              *middle,
              frame({"jsonrpc": "2.0", "id": "health", "method": HEALTH, "params": {}}),
              frame({"jsonrpc": "2.0", "id": "shutdown", "method": "shutdown"}),
              frame({"jsonrpc": "2.0", "method": "exit"})]
    # From a thread: a server that stopped reading would block this write too.
    writer = threading.Thread(target=lambda: (proc.stdin.write(b"".join(frames)), proc.stdin.flush()), daemon=True)
    writer.start()
    try:
        wanted = sum(b'"id"' in piece for piece in frames)  # a request to each piece at most
        got: list[dict[str, Any]] = []
        while len(got) < wanted:
            message = messages.get(timeout=WAIT_SECONDS)
            assert not isinstance(message, Exception), message
            if "method" not in message:
                got.append(message)
        got.sort(key=lambda answer: str(answer["id"]))
        # stderr is still unread: the exit waits a bounded while for it, not for ever.
        assert proc.wait(WAIT_SECONDS) == 0
        return got, proc.stderr.read().decode()
    finally:
        stop(proc, reader)
        writer.join(WAIT_SECONDS)
        proc.stderr.close()


def test_log_lines_nobody_reads_hold_up_no_answer_and_no_exit(tmp_path):
    answers, log = _serve_without_reading_stderr([*SERVER_COMMAND, "--workspace", str(tmp_path)], tmp_path,
                                                 frame(BAD_OPEN) * BAD_NOTIFICATIONS)
    assert [answer["id"] for answer in answers] == ["health", "init", "shutdown"]
    assert answers[0]["result"]["status"] == "ok"
    assert log.count("invalid params for textDocument/didOpen") > 100
    assert "Traceback" not in log and "Fatal Python error" not in log, log[-2000:]


def test_a_handler_printing_to_stderr_nobody_reads_holds_up_no_answer(tmp_path):
    """A published agent's handler runs on the event loop: its prints used to block it."""
    answers, log = _serve_without_reading_stderr([sys.executable, str(PRINTING_AGENT), "--memory"], tmp_path,
                                                 frame(SEND))
    assert [answer["id"] for answer in answers] == ["health", "init", "send", "shutdown"]
    task = answers[2]["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and task["artifacts"][0]["parts"] == [{"text": "hi"}]
    assert "printed 0 " in log and "Traceback" not in log, log[-2000:]


@pytest.mark.parametrize("how, line", [("--print", "to stderr 0 "), ("--warn", "warned 0 ")])
def test_a_handler_writing_to_stderr_nobody_reads_holds_up_no_answer(tmp_path, how, line):
    """Straight to ``sys.stderr`` or through ``warnings``: once stdout carries the
    protocol, stderr is written through the log's queue too."""
    answers, log = _serve_without_reading_stderr([sys.executable, str(STDERR_AGENT), "--memory", how], tmp_path,
                                                 frame(SEND))
    assert [answer["id"] for answer in answers] == ["health", "init", "send", "shutdown"]
    task = answers[2]["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and task["artifacts"][0]["parts"] == [{"text": "hi"}]
    assert line in log and "Traceback" not in log, log[-2000:]
