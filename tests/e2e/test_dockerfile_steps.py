"""The Dockerfile's steps, run without Docker: there is no Docker engine here or in CI,
so this copies exactly what the Dockerfile COPYs into a fresh venv's context, runs its
``pip install`` and its CMD (on loopback), so a broken COPY set, install command or CMD
fails CI."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import httpx
import pytest

from tests.conftest import REPO
from tests.venvs import host_env, make_venv, pip_install

PIP_TIMEOUT = 300


@dataclass
class Steps:
    """What the Dockerfile asks for, container paths kept as written."""

    copies: list[tuple[list[str], PurePosixPath, bool]] = field(default_factory=list)  # sources, destination, is a dir
    env: dict[str, str] = field(default_factory=dict)
    pip_install: list[str] = field(default_factory=list)
    pip_workdir: PurePosixPath = PurePosixPath("/")
    cmd: list[str] = field(default_factory=list)
    workdir: PurePosixPath = PurePosixPath("/")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), with continuation lines joined and comments dropped."""
    found, pending = [], ""
    for line in text.splitlines():
        if line.strip().startswith("#") or not (pending or line.strip()):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, rest = (pending + line).strip().partition(" ")
        found.append((keyword.upper(), rest.strip()))
        pending = ""
    return found


def parse(dockerfile: Path) -> Steps:
    steps = Steps()
    for keyword, rest in instructions(dockerfile.read_text()):
        if keyword == "WORKDIR":
            steps.workdir = steps.workdir / rest
        elif keyword == "ENV":
            words = shlex.split(rest)
            if "=" not in words[0]:  # the legacy form, ENV KEY value
                words = [f"{words[0]}={' '.join(words[1:])}"]
            steps.env.update(word.split("=", 1) for word in words)
        elif keyword == "COPY":
            *sources, dest = [word for word in shlex.split(rest) if not word.startswith("--")]
            steps.copies.append((sources, steps.workdir / dest, dest.endswith("/") or len(sources) > 1))
        elif keyword == "RUN":
            for command in rest.split("&&"):  # only pip: useradd/chown need root and are image plumbing
                if (words := shlex.split(command))[:2] == ["pip", "install"]:
                    assert not steps.pip_install, "more than one pip install"
                    steps.pip_install, steps.pip_workdir = words, steps.workdir
        elif keyword == "CMD":
            steps.cmd = json.loads(rest)
    assert steps.copies and steps.pip_install and steps.cmd, steps
    return steps


def copy_into(root: Path, repo: Path, steps: Steps) -> None:
    """The COPY instructions, with Docker's rules: a directory's contents go to the
    destination; a file goes into it when it ends with / or has several sources."""
    for sources, dest, into_dir in steps.copies:
        target = root / dest.relative_to("/")
        for source in sources:
            path = repo / source
            assert path.exists(), f"COPY {source}: not in the build context"
            if path.is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            else:
                into = into_dir or target.is_dir()
                (target if into else target.parent).mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / path.name if into else target)


def with_option(cmd: list[str], option: str, value: str) -> list[str]:
    assert option in cmd, f"the CMD has no {option}: {cmd}"
    index = cmd.index(option) + 1
    return [*cmd[:index], value, *cmd[index + 1:]]


@pytest.mark.timeout(PIP_TIMEOUT + 120)
def test_the_dockerfile_installs_and_serves(tmp_path):
    steps = parse(REPO / "Dockerfile")
    root = tmp_path / "image"  # the image's filesystem: /app is root/app, /workspace root/workspace
    copy_into(root, REPO, steps)

    bin_dir = make_venv(tmp_path / "venv")
    host = host_env()
    workspace = root / PurePosixPath(steps.env.get("CLEVERAGENTS_WORKSPACE", str(steps.workdir))).relative_to("/")
    env = {**steps.env, "CLEVERAGENTS_WORKSPACE": str(workspace)}
    # pip keeps the host's settings (the local package mirror); the server gets a container's bare environment.
    path = f"{bin_dir}{os.pathsep}{host.get('PATH', os.defpath)}"
    installed = pip_install(bin_dir, steps.pip_install[2:], cwd=root / steps.pip_workdir.relative_to("/"),
                            env={**host, **env, "PATH": path}, timeout=PIP_TIMEOUT)
    assert installed.returncode == 0, (installed.stdout + installed.stderr)[-3000:]

    cmd = with_option(with_option(steps.cmd, "--host", "127.0.0.1"), "--port", "0")  # 0: the OS picks a free port
    assert shutil.which(cmd[0], path=path) == str(bin_dir / cmd[0]), "the CMD's program is not from the install"
    workdir = root / steps.workdir.relative_to("/")
    workspace.mkdir(parents=True, exist_ok=True)
    (home := tmp_path / "home").mkdir()
    server = subprocess.Popen(cmd, cwd=workdir, env={**env, "PATH": path, "HOME": str(home)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        # No secret in the image's environment: the server makes a token and prints it,
        # then "listening on http://HOST:PORT" once bound.
        lines = [server.stderr.readline()]
        while lines[-1] and not lines[-1].startswith("listening on") and len(lines) < 20:
            lines.append(server.stderr.readline())
        match = re.match(r"listening on (http://127\.0\.0\.1:\d+)$", lines[-1].strip())
        assert match, lines
        token = next(m.group(1) for line in lines if (m := re.match(r"^\s+token: (\S+)$", line)))
        url = match.group(1)
        card = httpx.get(url + "/.well-known/agent-card.json", timeout=10).json()
        assert {"url": url + "/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"} in card["supportedInterfaces"]
        assert httpx.post(url + "/a2a", timeout=10, json={"jsonrpc": "2.0", "id": 0, "method": "ListTasks"}).status_code == 401
        sent = httpx.post(url + "/a2a", headers={"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}, timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}}}).json()
        assert sent["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", sent  # the local actor answers
    finally:
        server.terminate()
        try:
            out, err = server.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
        print(f"server stdout:\n{out}\nserver stderr:\n{err}")  # pytest shows it when the test fails
    assert server.returncode == 0  # uvicorn shuts down gracefully on SIGTERM, and run_http returns 0
    assert "Traceback" not in out + err
