"""The installed console scripts as a new user meets them, in two fresh venvs built
once per session: the base install (``pip install -e .``) and the http extra
(``pip install -e ".[http]"``). Each case runs in both unless it is about what only
one of them has."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.listening import listening
from tests.venvs import host_env, make_venv, pip_install

PIP_TIMEOUT = 300
TIMEOUT = 60


def fresh_install(tmp_path_factory: pytest.TempPathFactory, name: str, target: str) -> Path:
    """A new venv with ``pip install -e TARGET`` and nothing else: its bin directory."""
    bin_dir = make_venv(tmp_path_factory.mktemp(name) / "venv", with_pip=False)
    done = pip_install(bin_dir, ["--quiet", "-e", target], timeout=PIP_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    return bin_dir


def has_module(bin_dir: Path, module: str) -> bool:
    return subprocess.run([str(bin_dir / "python"), "-c", f"import {module}"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = fresh_install(tmp_path_factory, "base-install", str(REPO))
    assert not has_module(bin_dir, "starlette"), "the base install must not have the http extra"
    return bin_dir


@pytest.fixture(scope="session")
def http_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = fresh_install(tmp_path_factory, "http-install", f"{REPO}[http]")
    assert has_module(bin_dir, "starlette") and not has_module(bin_dir, "pytest"), "the http extra, and only it"
    return bin_dir


@pytest.fixture(params=["base", "http"])
def install(request: pytest.FixtureRequest) -> Path:
    bin_dir: Path = request.getfixturevalue(f"{request.param}_install")
    return bin_dir


def run(bin_dir: Path, program: str, *args: str, cwd: Path, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / program), *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL,
                          env={**host_env(), **(env or {})})


def many(bin_dir: Path, cwd: Path, *commands: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda args: run(bin_dir, *args, cwd=cwd), commands))


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_serving_over_http_without_the_extra_names_the_install(install, workspace):
    # With the extra, --help: the options are there, and nothing is left serving.
    help_ = ("--help",) if has_module(install, "starlette") else ()
    agents, module = many(install, workspace, ("agents", "serve", "--http", "--port", "0", *help_),
                          ("python", "-m", "cleveragents.transports.http", "--port", "0", *help_))
    if has_module(install, "starlette"):
        assert agents.returncode == 0 and "--port" in agents.stdout, agents.stderr
        assert module.returncode == 0 and "--port" in module.stdout, module.stderr
        return
    for result in agents, module:
        assert result.returncode == 2
        line = one_line(result)
        assert 'pip install -e ".[http]"' in line and "starlette" in line
    assert one_line(agents).startswith("agents: ")


def test_serving_grpc_without_the_extra_names_the_install(http_install, workspace):
    assert not has_module(http_install, "grpc")
    result = run(http_install, "agents", "serve", "--grpc-port", "0", "--port", "0", "--no-auth", cwd=workspace)
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("agents serve: gRPC serving is not available") and 'pip install -e ".[grpc]"' in line


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def configured_workspace(workspace: Path) -> Path:
    """The configuration page's complete example, its model endpoint moved to a port
    where nothing listens."""
    section = (REPO / "docs" / "configuration.md").read_text().split("## The configuration file", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    assert 'base_url = "http://127.0.0.1:11434/v1"' in toml
    toml = toml.replace("127.0.0.1:11434", f"127.0.0.1:{_closed_port()}")
    (workspace / ".cleveragents").mkdir(exist_ok=True)
    (workspace / ".cleveragents" / "config.toml").write_text(toml)
    return workspace


def test_model_actors_and_remote_servers_work_in_every_install(install, workspace):
    """httpx comes with the base install: a model actor fails as a task, and an
    unreachable server is exit 10, not a missing module."""
    ws = configured_workspace(workspace)
    sent, remote = many(install, ws, ("agents", "send", "hello"),
                        ("agents", "--server", f"http://127.0.0.1:{_closed_port()}", "--token", "x", "health", "check"))
    assert sent.returncode == 1, sent.stderr
    assert "No module named" not in sent.stderr
    assert "can't reach the model endpoint" in sent.stderr.splitlines()[-1]
    assert remote.returncode == 10, remote.stderr
    assert "127.0.0.1" in one_line(remote)


def test_a_failed_task_is_one_line_unless_debugging(install, workspace):
    ws = configured_workspace(workspace)
    # One after the other: together, one would wait for the other's lock on the state directory, and say so.
    quiet = run(install, "agents", "send", "hello", cwd=ws)
    debug = run(install, "agents", "send", "hello", "--log-level", "debug", cwd=ws)
    assert quiet.returncode == debug.returncode == 1
    line = one_line(quiet)
    assert re.fullmatch(r"agents: task \S+ failed: ActorError: openai/gpt-4o: can't reach the model endpoint .*", line)
    assert "Traceback" in debug.stderr and debug.stderr.strip().splitlines()[-1].startswith("agents: task ")


def test_a_missing_workspace_is_refused(install, tmp_path):
    missing = tmp_path / "no" / "such" / "workspace"
    flag, env = run(install, "agents", "--workspace", str(missing), "health", "check", cwd=tmp_path), \
        run(install, "agents", "plan", "list", cwd=tmp_path, env={"CLEVERAGENTS_WORKSPACE": str(missing)})
    for result in flag, env:
        assert result.returncode == 2 and result.stdout == ""
        assert one_line(result) == f"agents: the workspace {missing} is not a directory"
    assert not (tmp_path / "no").exists(), "nothing is created"


def test_a_bad_configuration_file_is_one_line(install, workspace):
    path = workspace / ".cleveragents" / "config.toml"
    path.parent.mkdir()
    path.write_text('[actors."team/reviewer"]\nprovider = "openai"\ndescripton = "Reviews diffs"\n')
    expected = f'{path}:3: actors."team/reviewer".descripton: unknown key'
    agents, lsp = many(install, workspace, ("agents", "health", "check"), ("cleveragents-lsp",))
    assert (agents.returncode, one_line(agents)) == (2, f"agents: {expected}")
    assert (lsp.returncode, one_line(lsp)) == (2, f"cleveragents-lsp: {expected}")


@contextlib.contextmanager
def http_server(bin_dir: Path, workspace: Path, *options: str) -> Iterator[str]:
    """``agents serve --http`` from ``bin_dir``, an install that has the extra; its URL."""
    with listening([str(bin_dir / "agents"), "serve", "--http", "--port", "0", "--memory",
                    "--workspace", str(workspace), *options], env=host_env()) as served:
        assert served.url.startswith("http://127.0.0.1:"), served.line
        yield served.url


def test_the_token_is_optional_and_can_come_from_the_environment(install, http_install, workspace):
    with http_server(http_install, workspace, "--no-auth") as open_url, \
            http_server(http_install, workspace, "--auth-token", "s3cret") as url:
        no_token = run(install, "agents", "--server", open_url, "health", "check", cwd=workspace)
        from_env = run(install, "agents", "--server", url, "health", "check", cwd=workspace,
                       env={"CLEVERAGENTS_TOKEN": "s3cret"})
        missing = run(install, "agents", "--server", url, "health", "check", cwd=workspace)
    assert no_token.returncode == 0 and "status          ok" in no_token.stdout, no_token.stderr
    assert from_env.returncode == 0 and "status          ok" in from_env.stdout, from_env.stderr
    assert missing.returncode == 5 and "Authentication required" in one_line(missing)


def test_action_list_shows_what_plan_use_takes(install, workspace):
    table, listed = many(install, workspace, ("agents", "action", "list", "--memory"),
                         ("agents", "action", "list", "--json", "--memory"))
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["NAME", "ARGUMENTS", "DESCRIPTION"]
    assert "replace      pattern replacement [glob] [ignore_case]" in table.stdout
    assert {"replace", "apply-patch"} <= {a["name"] for a in json.loads(listed.stdout)["actions"]}


def test_the_local_actor_names_cli_commands_to_the_cli(install, http_install, workspace):
    """The CLI marks its messages; an editor's message, unmarked, gets the protocol's
    method names."""
    import httpx

    write = ("send", "fs.write path=notes.txt text=hi")
    with http_server(http_install, workspace, "--no-auth") as url:
        local, remote = many(install, workspace, ("agents", *write, "--memory"), ("agents", "--server", url, *write))
        editor = httpx.post(url + "/a2a", headers={"A2A-Version": "1.0"}, timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": write[1]}]}}}).json()
    for result in local, remote:
        assert result.returncode == 0, result.stderr
        assert "`agents plan use ACTION" in result.stdout and "`agents action list`" in result.stdout
        assert "_cleveragents/" not in result.stdout
    reply = json.dumps(editor["result"])
    assert "`_cleveragents/plan/use`" in reply and "agents plan use" not in reply
    assert not (workspace / "notes.txt").exists()
