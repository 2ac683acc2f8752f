"""Commands an attacker chose, run as plan steps through a real server, as root and as an
unprivileged user: none of them may reach past the sandbox.

The allow-list in these tests is wide on purpose (``python3``, ``git log``, ``make``,
``grep``): the allow-list is the second layer, and what is tested here is the first,
the confinement itself. Every attack leaves a marker where it would land; the tests
look for the markers on the disk, in the plan's changes, and in its output.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import memory_bytes
from tests.security.identities import Identity
from tests.security.stdio_server import PLAN, IdentityServer

ALLOW = ["git log", "git status", "git diff", "cat", "grep", "make", "ls", "python3"]
SECRETS = ("SECRET-env", "SECRET-idrsa", "SECRET-gitconfig", "SECRET-outside", "SECRET-ssh", "SECRET-aws",
           "SECRET-netrc", "SECRET-config", "SECRET-state")


def _git(identity: Identity, workspace: Path, *args: str) -> None:
    done = identity.run(["git", "-C", str(workspace), *args], env={**identity.popen_options()["env"],
                                                                   "GIT_CONFIG_GLOBAL": os.devnull})
    assert done.returncode == 0, done.stderr


@pytest.fixture
def attacked(identity: Identity) -> Iterator[tuple[IdentityServer, Path, Path]]:
    """A git repository with secrets in it, links out of it, and a server on it
    allowing ``ALLOW``; also the directory outside that the links point into."""
    outside = identity.directory("outside")
    (outside / "secret.txt").write_text("SECRET-outside\n")
    (outside / "Makefile").write_text("all:\n\t@cat secret.txt\n")
    (outside / "f").write_text("SECRET-outside\n")
    workspace = identity.directory("ws")
    (workspace / "src").mkdir()
    (workspace / "src" / "long.py").write_text("x" * 60 + "\n")
    (workspace / "README.md").write_text("hello\n")
    (workspace / ".env").write_text("TOKEN=SECRET-env\n")
    (workspace / "id_rsa").write_text("SECRET-idrsa\n")
    identity.own(workspace)
    _git(identity, workspace, "init", "-q")
    _git(identity, workspace, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "add", "README.md", "src")
    _git(identity, workspace, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "first")
    _git(identity, workspace, "config", "user.name", "SECRET-gitconfig")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "link_out").symlink_to(outside / "not-yet")  # a link whose target does not exist yet
    xdg = identity.directory("xdg")
    (xdg / "cleveragents").mkdir()
    (xdg / "cleveragents" / "config.toml").write_text(f"[shell]\nallow = {json.dumps(ALLOW)}\n")
    identity.own(workspace)
    identity.own(outside)
    identity.own(xdg)
    server = IdentityServer(identity, workspace, env={"XDG_CONFIG_HOME": str(xdg)})
    try:
        yield server, workspace, outside
    finally:
        server.close()


def _outputs(server: IdentityServer, plan_id: str) -> str:
    """Everything a client can read of a plan: its tree, artifacts and diff."""
    parts = [server.call(PLAN + name, {"plan_id": plan_id}) for name in ("tree", "artifacts", "diff")]
    for decision in parts[0]["result"]["decisions"]:
        parts.append(server.call(PLAN + "explain", {"plan_id": plan_id, "decision_id": decision["decision_id"]}))
    return json.dumps(parts)


def _run(server: IdentityServer, command: str | list[str]) -> tuple[dict[str, Any], str]:
    line = command if isinstance(command, str) else shlex.join(command)
    status = server.run_plan("run", {"command": line, "timeout": 30})
    return status, _outputs(server, status["plan_id"])


def _snapshot(root: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and ".cleveragents" not in path.parts:
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def _no_secret(text: str) -> None:
    leaked = [secret for secret in SECRETS if secret in text]
    assert leaked == [], f"leaked: {leaked}"


def _step_error(server: IdentityServer, plan_id: str) -> dict[str, Any]:
    tree = server.result(PLAN + "tree", {"plan_id": plan_id})
    failed = [decision for decision in tree["decisions"] if decision.get("outcome") == "failed"]
    assert failed, tree
    explained = server.result(PLAN + "explain", {"plan_id": plan_id, "decision_id": failed[-1]["decision_id"]})
    return explained["error"]


def test_a_git_config_written_by_a_command_never_runs(attacked):
    server, workspace, _ = attacked
    before = (workspace / ".git" / "config").read_bytes()
    status, _ = _run(server, ["git", "log", "-1", "--format=[core]%n%x09fsmonitor = touch FSMONITOR-RAN; false%n",
                              "--output=.git/config"])
    assert status["state"] == "failed"
    error = _step_error(server, status["plan_id"])
    assert error["type"] == "AuthorizationError"  # -32003 for the execute that ran it
    assert error["data"]["reason"] == "protected_path" and ".git/config" in error["data"]["paths"]
    status, _ = _run(server, "git status")
    assert status["state"] != "failed"
    assert (workspace / ".git" / "config").read_bytes() == before
    assert not list(workspace.parent.rglob("FSMONITOR-RAN"))


@pytest.mark.parametrize("target", [".cleveragents/state.db", ".cleveragents/actions/x.toml"])
def test_a_command_cannot_reach_the_state_directory(attacked, target):
    server, workspace, _ = attacked
    session = server.result("session.create", {"actor_name": "local/default", "metadata": {"note": "SECRET-state"}})
    state = workspace / ".cleveragents" / "state.db"
    size = state.stat().st_size
    status, output = _run(server, ["git", "log", "-1", "--format=%H", f"--output={target}"])
    _no_secret(output)
    actions = server.result("_cleveragents/registry/action/list", {})
    assert "x" not in [action["name"] for action in actions["actions"]]
    assert not (workspace / ".cleveragents" / "actions" / "x.toml").exists()
    assert state.stat().st_size >= size
    listed, _ = _run(server, "ls -la .cleveragents")
    assert "state.db" not in _outputs(server, listed["plan_id"])
    assert server.close() == 0
    again = IdentityServer(server.identity, workspace, env=server.env)
    try:
        sessions = again.result("session.list", {})
        assert session["session_id"] in json.dumps(sessions)
    finally:
        again.close()


@pytest.mark.parametrize("output", ["link_out", "link_out/pwned.txt"])
def test_a_link_whose_target_does_not_exist_yet_leads_nowhere(attacked, output):
    server, workspace, outside = attacked
    status, _ = _run(server, ["git", "log", "-1", "--format=%H", f"--output={output}"])
    assert not (outside / "not-yet").exists()
    assert {path.name for path in outside.iterdir()} == {"secret.txt", "Makefile", "f"}
    diff = server.result(PLAN + "diff", {"plan_id": status["plan_id"]})
    assert diff["files"] == [], diff


@pytest.mark.parametrize("command", ["cat .env", "cat id_rsa", "cat .git/config", "grep -R SECRET .",
                                     "grep -r SECRET linkdir", "cat linkdir/secret.txt", "make -Clinkdir",
                                     "make -flinkdir/Makefile", "grep -flinkdir/f README.md", "ls -la",
                                     "git log --format=%an%n%cn"])
def test_secrets_and_what_links_point_to_never_reach_the_output(attacked, command):
    server, _, _ = attacked
    status, output = _run(server, command)
    _no_secret(output)


HOSTILE = textwrap.dedent('''
    import json, os, signal, socket, subprocess, sys, time
    report = {}
    def attempt(name, action):
        try:
            report[name] = action()
        except BaseException as exc:
            report[name] = "refused: " + type(exc).__name__
    home, outside, port, server_pid = json.load(open("targets.json"))  # the allow-list's path checks never see them
    for name in (".ssh/id_rsa", ".aws/credentials", ".netrc", ".config/gh/hosts.yml"):
        attempt("read " + name, lambda: open(os.path.join(home, name)).read())
    attempt("read outside", lambda: open(os.path.join(outside, "secret.txt")).read())
    attempt("write outside", lambda: open(os.path.join(outside, "pwned"), "w").write("x"))
    attempt("write etc", lambda: open("/etc/pwned", "w").write("x"))
    attempt("write through a link", lambda: open("link_out", "w").write("x"))
    attempt("tcp", lambda: socket.create_connection(("127.0.0.1", port), timeout=2).send(b"pwned") and None)
    attempt("kill server", lambda: os.kill(server_pid, signal.SIGKILL))
    attempt("server environ", lambda: open(f"/proc/{server_pid}/environ", "rb").read().decode(errors="replace"))
    attempt("processes", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    attempt("umount", lambda: subprocess.run(["umount", "-l", os.getcwd()], capture_output=True).returncode)
    attempt("state", lambda: os.listdir(".cleveragents"))
    attempt("env file", lambda: open(".env").read())
    if os.fork() == 0:  # a daemon that would outlive the step and write later
        os.setsid()
        time.sleep(1.5)
        open(os.path.join(outside, "daemon"), "w").write("x")
        open("daemon-ran", "w").write("x")
        os._exit(0)
    open("made-by-step.txt", "w").write("kept\\n")
    print(json.dumps(report))
''')


class Listener:
    """A TCP listener on loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.connected = False
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.connected = True
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self.socket.close()


def test_a_hostile_program_is_confined(attacked):
    server, workspace, outside = attacked
    (workspace / "evil.py").write_text(HOSTILE)
    listener = Listener()
    (workspace / "targets.json").write_text(json.dumps([str(server.identity.home), str(outside), listener.port,
                                                        server.proc.pid]))
    try:
        before = _snapshot(workspace)
        status, output = _run(server, "python3 evil.py")
        time.sleep(2.0)  # past the daemon's wake-up
    finally:
        listener.close()
    assert status["state"] != "failed", output
    artifacts = server.result(PLAN + "artifacts", {"plan_id": status["plan_id"]})["artifacts"]
    log = next(a["text"] for a in artifacts if a["name"].startswith("shell-"))
    report = json.loads(log.strip().splitlines()[-1])
    _no_secret(output)
    for attempt in ("read .ssh/id_rsa", "read .aws/credentials", "read .netrc", "read .config/gh/hosts.yml",
                    "read outside", "write outside", "write etc", "write through a link", "tcp", "kill server",
                    "server environ", "state", "env file"):
        assert str(report[attempt]).startswith("refused"), (attempt, report[attempt])
    assert server.proc.poll() is None and not listener.connected
    assert server.proc.pid not in report["processes"] and max(report["processes"]) < 100  # its own processes only
    assert not (outside / "pwned").exists() and not (outside / "daemon").exists()
    assert not (outside / "not-yet").exists()
    assert _snapshot(workspace) == before  # the live workspace is untouched until an apply
    diff = server.result(PLAN + "diff", {"plan_id": status["plan_id"]})
    assert [file["path"] for file in diff["files"]] == ["made-by-step.txt"]  # the daemon was gone before it wrote
    server.result(PLAN + "apply", {"plan_id": status["plan_id"]})
    assert (workspace / "made-by-step.txt").read_text() == "kept\n"
    server.result(PLAN + "rollback", {"plan_id": status["plan_id"]})
    assert not (workspace / "made-by-step.txt").exists()


# Six files of 200 MiB (sparse: no disk is used), under the 256 MiB a file may have, three
# where .gitignore leaves them out and three where they would be part of the plan.
BIG_WRITES = """
import os
for folder in ("build", "out"):
    os.makedirs(folder, exist_ok=True)
    for n in range(3):
        with open(f"{folder}/big-{n}.bin", "wb") as f:
            f.truncate(200 * 1024 * 1024)
"""


def test_what_a_command_writes_is_read_one_file_at_a_time_within_the_budget(attacked):
    """A command may leave gigabytes in its layer: what .gitignore leaves out is never
    read, and the rest is read a file at a time, each only if the plan's budget has
    room for it."""
    server, workspace, _ = attacked
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "big.py").write_text(BIG_WRITES)
    before = memory_bytes(server.proc.pid, "VmHWM")
    status, output = _run(server, "python3 big.py")
    after = memory_bytes(server.proc.pid, "VmHWM")
    assert before and after, "the server is gone"
    grown = (after - before) / 2**20
    assert status["state"] == "failed", output
    error = _step_error(server, status["plan_id"])
    assert error["data"]["limit"] == "max_bytes_written", error
    # One file of 200 MiB fits the budget and is read; the next would not, and is not.
    assert grown < 400, f"the server's peak memory grew by {grown:.0f} MiB"
    assert server.call("_cleveragents/health/check", {})["result"]["status"] == "ok"


# A user namespace whose own limit allows no nested one: the sandbox can't be made there.
NO_NAMESPACES = ["unshare", "--user", "--map-root-user", "--", "sh", "-c",
                 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh"]


def test_without_namespaces_a_command_is_refused_naming_what_is_missing(identity: Identity):
    workspace = identity.directory("ws")
    (workspace / "README.md").write_text("hello\n")
    identity.own(workspace)
    server = IdentityServer(identity, workspace, wrapper=NO_NAMESPACES)
    try:
        status = server.run_plan("run", {"command": "cat README.md"})
        assert status["state"] == "failed"
        error = _step_error(server, status["plan_id"])
        assert error["type"] == "AuthorizationError" and error["data"]["reason"] == "sandbox_unavailable"
        assert error["data"]["missing"] == ["user_namespaces"]
        assert 'sandbox = "off"' in error["data"]["setting"]
    finally:
        server.close()


def test_turned_off_by_the_configuration_commands_run_unconfined_with_a_warning(identity: Identity):
    workspace = identity.directory("ws")
    (workspace / "README.md").write_text("hello\n")
    xdg = identity.directory("xdg")
    (xdg / "cleveragents").mkdir()
    (xdg / "cleveragents" / "config.toml").write_text('[shell]\nsandbox = "off"\n')
    identity.own(workspace)
    identity.own(xdg)
    server = IdentityServer(identity, workspace, wrapper=NO_NAMESPACES, env={"XDG_CONFIG_HOME": str(xdg)})
    try:
        status = server.run_plan("run", {"command": "cat README.md"})
        assert status["state"] != "failed"
        artifacts = server.result(PLAN + "artifacts", {"plan_id": status["plan_id"]})["artifacts"]
        assert artifacts[0]["text"] == "hello\n"
        assert "turns the command sandbox off" in server.stderr()
    finally:
        server.close()
