"""Started by hand in a terminal, the stdio server says what it waits for; started by
an editor (stdin a pipe) it says nothing. The real console script, on a real pty."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("cleveragents-lsp")
HINT = b"waiting for an editor"


def read_until(fd: int, wanted: bytes, timeout: float = 15.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        os.set_blocking(fd, False)
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        if not chunk:
            break
        seen += chunk
    return seen


def test_in_a_terminal_it_says_it_waits_and_ctrl_d_stops_it(workspace):
    controller, terminal = os.openpty()
    proc = subprocess.Popen([str(SCRIPT), "--workspace", str(workspace), "--memory"], stdin=terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workspace)
    os.close(terminal)
    try:
        assert proc.stderr is not None
        hint = read_until(proc.stderr.fileno(), b"\n")
        assert HINT in hint and b"Ctrl-D" in hint and b"docs/" in hint, hint
        os.write(controller, b"\x04")  # Ctrl-D: end of input on the terminal
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
        os.close(controller)
    assert proc.returncode == 0, err
    assert out == b""  # stdout carries protocol messages only
    assert HINT not in err  # said once


def test_with_a_pipe_for_stdin_it_prints_nothing(workspace):
    done = subprocess.run([str(SCRIPT), "--workspace", str(workspace), "--memory"], input=b"",
                          capture_output=True, timeout=30, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"" and HINT not in done.stderr
