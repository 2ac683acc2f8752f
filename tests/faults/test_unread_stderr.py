"""A client that never reads the server's stderr (a script that pipes it and reads only
stdout) must not stop the server: once the pipe is full, the log lines that can't be
written must not hold up the answers, nor the exit."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any

from tests.e2e.rawclient import SERVER_COMMAND, frame
from tests.processes import stop

HEALTH = "_cleveragents/health/check"
# Each is answered by nothing but a warning line on stderr: together far more than a
# pipe holds (64 KiB).
BAD_NOTIFICATIONS = 1000
BAD_OPEN = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": [1]}}
WAIT_SECONDS = 20


def _responses(proc: subprocess.Popen[bytes], out: queue.Queue[dict[str, Any]]) -> None:
    assert proc.stdout is not None
    while True:
        headers = {}
        while (line := proc.stdout.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        if not line:
            return
        message = json.loads(proc.stdout.read(int(headers["content-length"])))
        if "id" in message and "method" not in message:
            out.put(message)


def test_a_client_that_never_reads_stderr_still_gets_answers_and_an_exit(tmp_path):
    proc = subprocess.Popen([*SERVER_COMMAND, "--workspace", str(tmp_path)], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answers: queue.Queue[dict[str, Any]] = queue.Queue()
    reader = threading.Thread(target=_responses, args=(proc, answers), daemon=True)
    reader.start()
    request = [frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"processId": None, "capabilities": {}}}),
               frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
               frame(BAD_OPEN) * BAD_NOTIFICATIONS,
               frame({"jsonrpc": "2.0", "id": 2, "method": HEALTH, "params": {}}),
               frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}),
               frame({"jsonrpc": "2.0", "method": "exit"})]
    # From a thread: a server that stopped reading would block this write too.
    assert proc.stdin is not None
    writer = threading.Thread(target=lambda: (proc.stdin.write(b"".join(request)), proc.stdin.flush()), daemon=True)
    writer.start()
    try:
        got = [answers.get(timeout=WAIT_SECONDS) for _ in range(3)]
        assert [answer["id"] for answer in got] == [1, 2, 3]
        assert got[1]["result"]["status"] == "ok"
        # stderr is still unread: the exit waits a bounded while for the log, not for ever.
        assert proc.wait(WAIT_SECONDS) == 0
        assert proc.stderr is not None
        log = proc.stderr.read().decode()
        assert log.count("invalid params for textDocument/didOpen") > 100
        assert "Traceback" not in log and "Fatal Python error" not in log, log[-2000:]
    finally:
        stop(proc, reader)
        writer.join(WAIT_SECONDS)
        if proc.stderr is not None:
            proc.stderr.close()
