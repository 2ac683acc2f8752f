"""The official npm ACP client under ``node --test`` against the real server: the
suites in ``node/``: ``session.test.mjs`` (a whole session) and ``io.test.mjs`` (files
read through the client, live plan steps, a terminal, a prompt's tool calls). ``npm ci``
installs the SDK pinned in ``node/package-lock.json`` (kept in node_modules while the
lock file is unchanged)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e import code_server
from tests.npm_installs import npm_ci

SUITE = Path(__file__).with_name("node")

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are needed"),
    pytest.mark.timeout(300),
]


@pytest.mark.parametrize(("suite", "tests"), [("session.test.mjs", 6), ("io.test.mjs", 2)])
def test_the_npm_client_suite_passes(suite, tests, tmp_path):
    npm_ci(SUITE, timeout=240)
    server = Path(sys.executable).with_name("cleveragents-lsp")
    assert server.exists(), "cleveragents-lsp is not installed in this environment"
    env = {"CLEVERAGENTS_LSP": str(server),  # the slow test actor is importable from the checkout
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "TMPDIR": str(tmp_path)}  # the suites' workspaces: pytest removes them in time, node's never
    output = code_server.run_checked(["node", "--test", suite], SUITE, 180, env)
    counts = {key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|cancelled) (\d+)$", output, re.M)}
    assert counts == {"tests": tests, "pass": tests, "fail": 0, "cancelled": 0}, output
