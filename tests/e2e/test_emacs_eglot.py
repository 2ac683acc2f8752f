"""Emacs's own LSP client, eglot, drives the stdio server in batch mode: it connects,
sends a custom request and a notification, and shuts the server down, which must then
exit with code 0 (eglot's `shutdown` carries `"params": null`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import SERVER_COMMAND
from tests.system_packages import require_debian_packages

SCRIPT = Path(__file__).resolve().parent / "emacs" / "eglot_session.el"


def test_eglot_connects_calls_and_shuts_the_server_down(tmp_path: Path):
    require_debian_packages("emacs-nox", "elpa-eglot")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("notes\n")
    env = {**os.environ, "CLEVERAGENTS_WORKSPACE": str(workspace),
           "CLEVERAGENTS_CMD": json.dumps([*SERVER_COMMAND, "--workspace", str(workspace)])}
    # -q, not -Q: Debian's site start-up makes its packages (elpa-eglot) loadable.
    done = subprocess.run([shutil.which("emacs") or "emacs", "--batch", "-q", "-l", str(SCRIPT)], cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "ALL PASSED" in done.stdout, output[-3000:]
    for step in ("CONNECTED cleveragents", "HEALTH ok", "SESSION ", "NOTIFIED", "SHUTDOWN null", "EXITED exit 0"):
        assert step in done.stdout, output[-3000:]
