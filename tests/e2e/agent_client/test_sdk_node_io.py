"""The official npm ACP client under ``node --test`` against the real server: the
suite in ``node/io.test.mjs`` (files read through the client, live plan steps, a
terminal, a prompt's tool calls). Installs the SDK as ``test_sdk_node`` does."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e import code_server
from tests.e2e.agent_client.test_sdk_node import INSTALL_STAMP, LOCK, SUITE

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are needed"),
    pytest.mark.timeout(300),
]


def test_the_npm_client_reads_buffers_follows_steps_and_shows_tool_calls():
    import hashlib

    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if not INSTALL_STAMP.is_file() or INSTALL_STAMP.read_text().strip() != digest:
        code_server.run_checked(["npm", "ci", "--no-audit", "--no-fund"], SUITE, 240)
        INSTALL_STAMP.write_text(digest)
    server = Path(sys.executable).with_name("cleveragents-lsp")
    assert server.exists(), "cleveragents-lsp is not installed in this environment"
    env = {"CLEVERAGENTS_LSP": str(server),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    output = code_server.run_checked(["node", "--test", "io.test.mjs"], SUITE, 180, env)
    counts = {key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|cancelled) (\d+)$", output, re.M)}
    assert counts == {"tests": 2, "pass": 2, "fail": 0, "cancelled": 0}, output
