"""Plans through a real stdio server on a real workspace: the acceptance flow in a git
repository, guard breaches, SIGKILL during an apply and during an execute,
``$/progress`` and its cancellation, guidance queued on a running plan.

What ``tests/contract/plan_cases.py`` already covers (through the facade and stdio)
is not repeated here.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cleveragents.app.plans import RESTART_REASON
from tests.e2e.rawclient import RawServer

PLAN = "_cleveragents/plan/"
EVENT = "_cleveragents/event"
PROGRESS = "$/progress"
TEMP_MARKER = ".cleveragents-tmp-"
REQUEST_CANCELLED = -32800
FORBIDDEN = -32003
INVALID_STATE = -32004
REPLACE = {"pattern": "foo", "replacement": "bar"}
CRASH_FILES = 3000
# Seconds between seeing the apply's journal and the SIGKILL: before the first write,
# and two moments during the writes.
KILL_DELAYS = (0.0, 0.02, 0.1)

# Runs until SIGUSR1 (or 30 s). It runs in the command sandbox, where neither its pid
# nor a file it writes is the test's to see: the test finds it by the marker in its
# command line (the sandbox shows it, by its real pid, in the machine's /proc).
SLEEPER_CODE = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(0))\n"
    "time.sleep(30)\n"
)

class Client:
    """A raw stdio server plus request ids and the calls a plan test makes."""

    def __init__(self, server: RawServer, workspace: Path):
        self.server = server
        self.workspace = workspace
        self.ids = itertools.count(1)

    def send(self, method: str, params: dict[str, Any]) -> int:
        msg_id = next(self.ids)
        self.server.send_message({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.server.send_message({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        return await self.server.response(self.send(method, params))

    async def result(self, method: str, **params: Any) -> dict[str, Any]:
        response = await self.call(method, **params)
        assert "result" in response, (method, response)
        return response["result"]

    async def error(self, method: str, **params: Any) -> dict[str, Any]:
        response = await self.call(method, **params)
        assert "error" in response, (method, response)
        return response["error"]

    async def use(self, action: str, arguments: dict[str, Any], profile: str = "supervised") -> str:
        plan = await self.result(PLAN + "use", action_name=action, arguments=arguments, automation_profile=profile)
        return plan["plan_id"]

    async def status(self, plan_id: str) -> dict[str, Any]:
        return await self.result(PLAN + "status", plan_id=plan_id)

    async def settled(self, plan_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """The plan's status once it is no longer running."""
        deadline = time.monotonic() + timeout
        while (status := await self.status(plan_id))["state"] == "running":
            assert time.monotonic() < deadline, f"plan {plan_id} still running after {timeout}s"
            await asyncio.sleep(0.05)
        return status

    def events(self, plan_id: str) -> list[tuple[str, str]]:
        """(phase, state) of every plan event received so far for ``plan_id``."""
        return [(m["params"]["data"]["phase"], m["params"]["data"]["state"]) for m in self.server.messages
                if m.get("method") == EVENT and m["params"].get("plan_id") == plan_id]


Spawn = Callable[..., Awaitable[Client]]


@pytest.fixture
async def spawn() -> AsyncIterator[Spawn]:
    """Starts (and at the end kills) servers: ``await spawn(workspace, *extra_args)``."""
    servers: list[RawServer] = []

    async def start(workspace: Path, *args: str) -> Client:
        server = await RawServer.start("--workspace", str(workspace), *args)
        servers.append(server)
        await server.initialize()
        return Client(server, workspace)

    yield start
    for server in servers:
        await server.kill()


@pytest.fixture
def python_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``shell.run`` looks commands up on the server's PATH: make ``python`` ours."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


class Sleeper:
    """A ``python`` command for ``shell.run`` that runs until released."""

    def __init__(self) -> None:
        self.marker = f"sleeper-{os.getpid()}-{time.monotonic_ns()}"
        self.pid: int | None = None

    @property
    def argv(self) -> list[str]:
        return ["python", "-c", SLEEPER_CODE, self.marker]

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def _find(self) -> int | None:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and self._is_it(int(entry)):
                return int(entry)
        return None

    def _is_it(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                return self.marker.encode() in file.read().split(b"\0")
        except OSError:
            return False

    async def started(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while (pid := self._find()) is None:
            assert time.monotonic() < deadline, "the step's command never started"
            await asyncio.sleep(0.01)
        self.pid = pid
        return pid

    def release(self) -> None:
        if self.alive():
            assert self.pid is not None
            os.kill(self.pid, signal.SIGUSR1)

    def alive(self) -> bool:
        return self.pid is not None and self._is_it(self.pid)

    async def gone(self, timeout: float = 3.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return not self.alive()

    def stop(self) -> None:
        pid = self.pid or self._find()
        if pid is not None and self._is_it(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def sleeper(tmp_path: Path, python_on_path: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sleeper]:
    sleeping = Sleeper()
    # `python -c` and paths outside the workspace are refused unless allowed: the
    # user's configuration allows exactly this command.
    user_config = tmp_path / "xdg" / "cleveragents" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(f"[shell]\nallow = [{json.dumps(sleeping.command)}]\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    yield sleeping
    sleeping.stop()


def snapshot(root: Path, skip: tuple[str, ...] = (".cleveragents",)) -> dict[str, Any]:
    """Every entry under ``root``: file bytes and mode, symlink targets, directories."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if set(relative.parts) & set(skip):
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[str(relative)] = ("link", os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            out[str(relative)] = ("dir", stat.S_IMODE(info.st_mode))
        else:
            out[str(relative)] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return out


# -- 1. the acceptance flow in a git repository ----------------------------------

REPO_FILES = {
    "src/app.py": (b"x = foo\nprint(x)\n", 0o644),
    "bin/run.sh": (b"#!/bin/sh\nexec foo \"$@\"\n", 0o755),
    "docs/crlf.txt": (b"foo\r\nkeep\r\n", 0o644),
    "untouched.txt": (b"nothing to see\n", 0o644),
}
EXPECTED_CHANGES = {  # path -> (removed lines, added lines) in `git diff`
    "src/app.py": (["x = foo"], ["x = bar"]),
    "bin/run.sh": (['exec foo "$@"'], ['exec bar "$@"']),
    "docs/crlf.txt": (["foo\r"], ["bar\r"]),
}
# The (phase, state) events up to the apply: manual gates execute and apply, supervised
# the apply only, autonomous nothing (it is never input-required).
PROFILE_EVENTS = {
    "manual": [("plan", "input-required"), ("execute", "running"), ("execute", "input-required")],
    "supervised": [("plan", "ready"), ("execute", "running"), ("execute", "input-required")],
    "autonomous": [("plan", "ready"), ("execute", "running"), ("execute", "completed")],
}
APPLY_AND_ROLLBACK_EVENTS = [("apply", "running"), ("apply", "completed"), ("rollback", "running"),
                             ("rollback", "completed")]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout.decode()


def git_repository(root: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root.mkdir()
    git(root, "init", "-q")
    for key, value in (("user.email", "tests@example.invalid"), ("user.name", "Tests"), ("commit.gpgsign", "false"),
                       ("core.autocrlf", "false"), ("core.filemode", "true")):
        git(root, "config", key, value)
    for path, (data, mode) in REPO_FILES.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "seed")
    return root


def changed_lines(diff: str) -> dict[str, tuple[list[str], list[str]]]:
    """``git diff`` output as path -> (removed lines, added lines)."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    current: tuple[list[str], list[str]] = ([], [])
    for line in diff.split("\n"):
        if line.startswith("+++ b/"):
            current = out.setdefault(line[len("+++ b/"):], ([], []))
        elif line.startswith(("---", "+++")):
            continue
        elif line.startswith("-"):
            current[0].append(line[1:])
        elif line.startswith("+"):
            current[1].append(line[1:])
    return out


async def wait_for_events(client: Client, plan_id: str, count: int) -> list[tuple[str, str]]:
    deadline = time.monotonic() + 5
    while len(client.events(plan_id)) < count and time.monotonic() < deadline:
        await client.result("_cleveragents/health/check")  # reads what was sent meanwhile
    return client.events(plan_id)


async def test_plan_flow_in_a_git_repository_under_each_profile(tmp_path, spawn):
    repo = git_repository(tmp_path / "repo")
    # The state directory lives outside the repository: git sees only the plan's work
    # (see test_state_dir_does_not_show_in_git_status for the default place).
    client = await spawn(repo, "--state-dir", str(tmp_path / "state"))
    await client.result("_cleveragents/event/subscribe")
    committed = snapshot(repo, skip=(".git",))

    for profile in ("manual", "supervised", "autonomous"):
        plan_id = await client.use("replace", REPLACE, profile)
        executed = await client.result(PLAN + "execute", plan_id=plan_id)
        assert (executed["phase"], executed["state"]) == PROFILE_EVENTS[profile][-1], profile

        diff = await client.result(PLAN + "diff", plan_id=plan_id)
        assert sorted(f["path"] for f in diff["files"]) == sorted(EXPECTED_CHANGES), profile
        assert "-x = foo\n+x = bar\n" in diff["diff"]
        assert git(repo, "status", "--porcelain") == "", f"{profile}: execute wrote to the workspace"

        applied = await client.result(PLAN + "apply", plan_id=plan_id)
        assert sorted(applied["files"]) == sorted(EXPECTED_CHANGES)
        assert sorted(git(repo, "status", "--porcelain").splitlines()) == sorted(f" M {p}" for p in EXPECTED_CHANGES)
        git_diff = git(repo, "diff")
        assert changed_lines(git_diff) == EXPECTED_CHANGES, git_diff
        assert "old mode" not in git_diff  # the executable stays executable
        assert (repo / "bin/run.sh").stat().st_mode & 0o777 == 0o755

        rolled = await client.result(PLAN + "rollback", plan_id=plan_id)
        assert (rolled["phase"], rolled["state"]) == ("rollback", "completed")
        assert git(repo, "status", "--porcelain") == "", profile
        assert snapshot(repo, skip=(".git",)) == committed, f"{profile}: not restored byte for byte"

        expected = PROFILE_EVENTS[profile] + APPLY_AND_ROLLBACK_EVENTS
        assert await wait_for_events(client, plan_id, len(expected)) == expected, profile


async def test_state_dir_does_not_show_in_git_status(tmp_path, spawn):
    repo = git_repository(tmp_path / "repo")
    client = await spawn(repo)
    await client.result("_cleveragents/health/check")
    assert (repo / ".cleveragents").is_dir()
    assert git(repo, "status", "--porcelain") == ""


# -- 2. guard breaches ------------------------------------------------------------

def creating_patch(path: str) -> str:
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+owned\n"


async def test_writes_outside_the_workspace_are_refused_and_change_nothing(tmp_path, spawn):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "inside.txt").write_bytes(b"foo\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "existing.txt").write_bytes(b"foo\n")
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    (workspace / "link.txt").symlink_to(outside / "existing.txt")
    client = await spawn(workspace)
    before = snapshot(tmp_path)

    patches = {
        "../outside.txt": creating_patch("../outside.txt"),
        "link/x.txt": creating_patch("link/x.txt"),
        "link/existing.txt": "--- a/link/existing.txt\n+++ b/link/existing.txt\n@@ -1 +1 @@\n-foo\n+owned\n",
        "link.txt": "--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-foo\n+owned\n",
    }
    for target, patch in patches.items():
        plan_id = await client.use("apply-patch", {"patch": patch}, "autonomous")
        error = await client.error(PLAN + "execute", plan_id=plan_id)
        assert error["code"] == FORBIDDEN, (target, error)
        assert error["data"]["reason"] in {"outside_workspace", "symlink_escape"}, (target, error)
        assert str(tmp_path) not in json.dumps(error), f"{target}: an absolute path leaked: {error}"
        status = await client.status(plan_id)
        assert (status["phase"], status["state"]) == ("execute", "failed")
        refused = await client.error(PLAN + "apply", plan_id=plan_id)
        assert refused["code"] == INVALID_STATE
        assert snapshot(tmp_path) == before, f"{target}: something changed on disk"

    # A replace over the whole workspace does not reach through the symlinks either.
    plan_id = await client.use("replace", {**REPLACE, "glob": "**/*"}, "autonomous")
    await client.result(PLAN + "execute", plan_id=plan_id)
    applied = await client.result(PLAN + "apply", plan_id=plan_id)
    assert applied["files"] == ["inside.txt"]
    assert snapshot(outside) == {"existing.txt": ("file", b"foo\n", 0o644)}
    assert not (tmp_path / "outside.txt").exists()


# -- 3. SIGKILL in the middle of an apply -------------------------------------------

def crash_workspace(root: Path) -> dict[str, int]:
    """~3000 small files in 30 directories; path -> the number in its content."""
    numbers = {}
    for i in range(CRASH_FILES):
        path = f"d{i % 30:02d}/f{i:04d}.txt"
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"foo %d\n" % i)
        numbers[path] = i
    return numbers


def words_on_disk(root: Path, numbers: dict[str, int]) -> dict[str, int]:
    """How many files hold each word (``foo`` or ``bar``)."""
    counts: dict[str, int] = {}
    for path, i in numbers.items():
        word = (root / path).read_bytes().removesuffix(b" %d\n" % i).decode()
        counts[word] = counts.get(word, 0) + 1
    return counts


async def kill_during_apply(spawn: Spawn, workspace: Path, delay: float) -> dict[str, int]:
    """Executes a replace, SIGKILLs the server ``delay`` s after the apply's journal
    appears, restarts it and checks the repair; returns the words on disk at the kill."""
    numbers = await asyncio.to_thread(crash_workspace, workspace)
    client = await spawn(workspace)
    plan_id = await client.use("replace", {**REPLACE, "glob": "d*/*.txt"})
    assert (await client.result(PLAN + "execute", plan_id=plan_id))["state"] == "input-required"
    journal = workspace / ".cleveragents" / "journal" / f"{plan_id}.json"
    client.send(PLAN + "apply", {"plan_id": plan_id})  # the answer never comes: the server dies first
    deadline = time.monotonic() + 20
    while not journal.exists():
        assert time.monotonic() < deadline, "the apply never wrote its journal"
        await asyncio.sleep(0.0005)
    await asyncio.sleep(delay)
    client.server.proc.kill()
    await client.server.proc.wait()
    at_kill = await asyncio.to_thread(words_on_disk, workspace, numbers)

    client = await spawn(workspace)
    status = await client.status(plan_id)
    after = await asyncio.to_thread(words_on_disk, workspace, numbers)
    assert len(after) == 1, f"delay {delay}: a mixed workspace after the restart: {after} (at the kill: {at_kill})"
    if "bar" in after:
        assert (status["phase"], status["state"]) == ("apply", "completed"), (delay, status)
    else:
        assert (status["phase"], status["state"]) == ("apply", "failed"), (delay, status)
        assert "undone" in status["reason"], status
    leftovers = [str(p.relative_to(workspace)) for p in workspace.rglob(f"*{TEMP_MARKER}*")]
    assert leftovers == [], f"delay {delay}: temp files left: {leftovers[:5]}"
    assert not journal.exists(), "the repaired journal was not discarded"
    return at_kill


@pytest.mark.serial  # three servers rewrite 3000 files each at once: slow beside another worker
async def test_sigkill_during_apply_leaves_all_or_nothing(tmp_path, spawn):
    # One workspace per kill moment, run side by side to keep the test short.
    outcomes = await asyncio.gather(*(kill_during_apply(spawn, tmp_path / f"workspace-{n}", delay)
                                      for n, delay in enumerate(KILL_DELAYS)), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    seen = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    # The point is to interrupt the writes: kills that all landed before the first
    # write or after the last one would prove nothing.
    assert any(len(words) == 2 for words in seen), f"no kill landed in the middle of an apply: {seen}"


# -- 4. $/progress and cancelling it ------------------------------------------------

async def test_execute_reports_progress_on_the_work_done_token(tmp_path, spawn):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_bytes(b"foo\n")
    client = await spawn(workspace)
    plan_id = await client.use("replace", REPLACE)
    seen = len(client.server.messages)
    msg_id = client.send(PLAN + "execute", {"plan_id": plan_id, "workDoneToken": "tok-1"})
    response = await client.server.response(msg_id)
    assert response["result"]["state"] == "input-required"
    before_response = client.server.messages[seen:-1]
    assert [m for m in before_response if m.get("method") == "window/showMessage"] == []
    progress = [m["params"] for m in before_response if m.get("method") == PROGRESS]
    assert {p["token"] for p in progress} == {"tok-1"}
    kinds = [p["value"]["kind"] for p in progress]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds[1:-1], kinds
    assert set(kinds[1:-1]) == {"report"}, kinds
    assert progress[0]["value"]["title"]


@pytest.mark.parametrize("how", ["window/workDoneProgress/cancel", "$/cancelRequest"])
async def test_cancelling_a_running_execute(tmp_path, spawn, sleeper, how):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    client = await spawn(workspace)
    plan_id = await client.use("run", {"command": sleeper.command}, "autonomous")
    msg_id = client.send(PLAN + "execute", {"plan_id": plan_id, "workDoneToken": "tok-slow"})
    await sleeper.started()
    started = time.monotonic()
    if how == "$/cancelRequest":
        client.notify(how, {"id": msg_id})
    else:
        client.notify(how, {"token": "tok-slow"})
    response = await client.server.response(msg_id)
    assert time.monotonic() - started < 2.0, "the cancel took too long"
    assert response["error"]["code"] == REQUEST_CANCELLED, response
    status = await client.status(plan_id)
    assert (status["phase"], status["state"]) == ("execute", "cancelled"), status
    tree = await client.result(PLAN + "tree", plan_id=plan_id)
    assert [d["outcome"] for d in tree["decisions"]] == ["cancelled"]
    assert await sleeper.gone(), "the step's command outlived the cancel"


# -- 5. SIGKILL while executing -----------------------------------------------------

async def test_a_plan_executing_when_the_server_dies_comes_back_interrupted(tmp_path, spawn, sleeper):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    client = await spawn(workspace)
    plan_id = await client.use("run", {"command": sleeper.command})
    running = await client.result(PLAN + "execute", plan_id=plan_id, wait=False)
    assert (running["phase"], running["state"], running["running"]) == ("execute", "running", True)
    await sleeper.started()
    await client.server.kill()
    # The step's command dies with the server: its guard sees the server's end of a pipe close.
    assert await sleeper.gone(timeout=5), "the step's command outlived the SIGKILLed server"

    client = await spawn(workspace)
    status = await client.status(plan_id)
    assert (status["phase"], status["state"]) == ("execute", "interrupted"), status
    assert status["reason"] == RESTART_REASON
    assert "execute" in status["allowed_actions"]


async def test_a_second_process_on_the_workspace_leaves_running_plans_alone(tmp_path, spawn, sleeper):
    """An `agents` command beside the editor's server must not treat the server's
    running plan as interrupted: only the state directory's owner repairs at start."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    client = await spawn(workspace)
    plan_id = await client.use("run", {"command": sleeper.command})
    await client.result(PLAN + "execute", plan_id=plan_id, wait=False)
    await sleeper.started()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    done = await asyncio.to_thread(
        subprocess.run, [str(Path(sys.executable).with_name("agents")), "--json", "plan", "status", plan_id],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (json.loads(done.stdout)["phase"], json.loads(done.stdout)["state"]) == ("execute", "running")
    status = await client.status(plan_id)
    assert (status["phase"], status["state"]) == ("execute", "running"), status
    await client.result(PLAN + "cancel", plan_id=plan_id)


# -- 6. guidance for a running plan -------------------------------------------------

async def test_prompt_queues_guidance_for_the_next_step(tmp_path, spawn, sleeper):
    workspace = tmp_path / "workspace"
    (workspace / ".cleveragents" / "actions").mkdir(parents=True)
    (workspace / "a.py").write_bytes(b"foo()\n")
    (workspace / ".cleveragents" / "actions" / "wait-then-edit.toml").write_text(
        'description = "Wait for a command, then edit"\n'
        f'[[steps]]\nid = "wait"\ntool = "shell.run"\narguments = {{ command = {json.dumps(sleeper.command)} }}\n'
        '[[steps]]\nid = "edit"\ntool = "fs.replace"\narguments = { pattern = "foo", replacement = "bar" }\n'
    )
    client = await spawn(workspace)
    plan_id = await client.use("wait-then-edit", {})
    await client.result(PLAN + "execute", plan_id=plan_id, wait=False)
    await sleeper.started()  # step 1 has taken its guidance: what comes now is for step 2

    first = await client.result(PLAN + "prompt", plan_id=plan_id, guidance="Keep the public API unchanged")
    second = await client.result(PLAN + "prompt", plan_id=plan_id, guidance="Prefer small diffs")
    assert (first["queued"], second["queued"]) == (1, 2)
    assert (second["phase"], second["state"]) == ("execute", "running")
    sleeper.release()

    status = await client.settled(plan_id)
    assert (status["phase"], status["state"]) == ("execute", "input-required"), status
    tree = await client.result(PLAN + "tree", plan_id=plan_id)
    wait, edit = tree["decisions"]
    explained_wait = await client.result(PLAN + "explain", plan_id=plan_id, decision_id=wait["decision_id"])
    explained_edit = await client.result(PLAN + "explain", plan_id=plan_id, decision_id=edit["decision_id"])
    assert (explained_wait["tool"], explained_wait["guidance"]) == ("shell.run", [])
    assert explained_edit["tool"] == "fs.replace"
    assert explained_edit["guidance"] == ["Keep the public API unchanged", "Prefer small diffs"]
    assert explained_edit["step_index"] == 1


AUTHORIZATION_ERROR = -32003


async def test_a_refused_command_fails_its_step_with_the_reason(tmp_path, spawn):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    client = await spawn(workspace)
    for command, reason in (("python -c 'open(\"pwned\", \"w\")'", "not_allowed"), ("cat ../outside.txt", "outside_workspace")):
        plan_id = await client.use("run", {"command": command}, "autonomous")
        response = await client.call(PLAN + "execute", plan_id=plan_id)
        assert response["error"]["code"] == AUTHORIZATION_ERROR, response
        assert response["error"]["data"]["reason"] == reason, response
        status = await client.status(plan_id)
        assert (status["phase"], status["state"]) == ("execute", "failed"), status
    assert not (workspace / "pwned").exists()
