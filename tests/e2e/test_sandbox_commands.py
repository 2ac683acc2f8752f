"""Every command the built-in allow-list holds, run by the built-in ``run`` action through a
real stdio server, inside the sandbox: each still does its job there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cleveragents.infra.tools.shell import DEFAULT_ALLOW
from tests.e2e.test_plans_stdio import PLAN, spawn  # noqa: F401  (the fixture)

# What each entry runs here, and a word its output must hold ("" for none; false exits 1).
COMMANDS = {
    "git status": ("git status", "On branch"), "git diff": ("git diff HEAD~1", "second"),
    "git log": ("git log --oneline", "second"), "git show": ("git show --stat HEAD", "second"),
    "git ls-files": ("git ls-files", "README.md"), "git grep": ("git grep -n hello", "README.md:1:hello"),
    "git blame": ("git blame README.md", "hello"), "git rev-parse": ("git rev-parse --abbrev-ref HEAD", ""),
    "python -m pytest": ("python -m pytest -q tests", "1 passed"),
    "python3 -m pytest": ("python3 -m pytest -q tests", "1 passed"), "pytest": ("pytest -q tests", "1 passed"),
    "ruff check": ("ruff check src", "All checks passed"), "ruff format --check": ("ruff format --check src", "1 file"),
    "make": ("make hello", "made hello"), "npm test": ("npm test", "npm tested"), "npm run": ("npm run lint", "linted"),
    "ls": ("ls src", "app.py"), "cat": ("cat README.md", "hello"), "echo": ("echo TODO", "TODO"),
    "grep": ("grep -rn hello README.md", "hello"), "true": ("true", ""), "false": ("false", ""),
}


def test_every_entry_of_the_built_in_list_is_covered():
    assert set(COMMANDS) == set(DEFAULT_ALLOW)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small repository with tests, a Makefile and an npm package; ``python`` and the
    test tools on PATH are this interpreter's."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "README.md").write_text("hello\n")
    (root / "src" / "app.py").write_text("def answer() -> int:\n    return 42\n")
    (root / "tests" / "test_app.py").write_text("def test_answer():\n    assert 6 * 7 == 42\n")
    (root / "Makefile").write_text("hello:\n\t@echo made hello\n")
    (root / "package.json").write_text(json.dumps({"name": "p", "version": "1.0.0", "scripts": {
        "test": "echo npm tested", "lint": "echo linted"}}))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    git = ["git", "-C", str(root), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "."], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "first"], check=True, env=env)
    (root / "README.md").write_text("hello\nsecond\n")
    subprocess.run([*git, "commit", "-qam", "second"], check=True, env=env)
    return root


@pytest.mark.parametrize("entry", sorted(COMMANDS))
async def test_a_built_in_command_runs_in_the_sandbox(project, spawn, entry):  # noqa: F811
    command, expected = COMMANDS[entry]
    program = command.split()[0]
    if shutil.which(program, path=os.environ["PATH"]) is None:
        pytest.fail(f"{program} is not installed: the test dependencies and the machine's packages provide it")
    client = await spawn(project)
    plan_id = await client.use("run", {"command": command}, "autonomous")
    await client.result(PLAN + "execute", plan_id=plan_id)
    status = await client.settled(plan_id)
    assert status["state"] != "failed", status
    artifacts = (await client.result(PLAN + "artifacts", plan_id=plan_id))["artifacts"]
    log = artifacts[0]["text"]
    tree = await client.result(PLAN + "tree", plan_id=plan_id)
    explained = await client.result(PLAN + "explain", plan_id=plan_id, decision_id=tree["decisions"][0]["decision_id"])
    output = explained["output"]
    assert output["sandbox"] == "on"
    assert output["exit_code"] == (1 if entry == "false" else 0), log
    assert expected in log, log
    assert output["changes"]["files_changed"] == 0, output["changes"]  # none of them changes the project
