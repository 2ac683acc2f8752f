"""``shell.run`` allow-list bypass attempts: shell syntax, env tricks, path tricks,
a workspace file shadowing an allowed name, and secrets in the child's environment.

The command never goes through a shell, so shell syntax is only ever text handed to
the allowed program; these tests prove it by the marker file each attack would
create. What the allow-list cannot stop (an allowed interpreter's own arguments) is
written up in docs/reliability.md (Security).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cleveragents.domain.errors import StructuredError
from cleveragents.domain.tools import ToolContext
from cleveragents.infra.tools.builtin import builtin_tools
from cleveragents.infra.tools.shell import DEFAULT_ALLOW

SHELL = next(tool for tool in builtin_tools() if tool.name == "shell.run")


def _run(ws: Path, command, **settings):
    context = ToolContext(view=None, workspace=str(ws), settings=settings)  # shell.run works on the disk
    try:
        return SHELL.run({"command": command, "timeout": 10}, context)
    except StructuredError as exc:
        return exc


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("keep\n")
    yield root
    assert not (root / "pwned").exists(), "an attack ran a second command"
    assert (root / "keep.txt").exists(), "an attack removed a file"


SHELL_SYNTAX = [
    "echo hi; touch pwned", "echo hi && touch pwned", "echo hi || touch pwned", "echo hi | touch pwned",
    "echo $(touch pwned)", "echo `touch pwned`", "echo hi > pwned", "echo hi & touch pwned",
    "echo hi\ntouch pwned", "echo ${IFS}touch${IFS}pwned", "echo hi; rm keep.txt", "echo <(touch pwned)",
]


@pytest.mark.parametrize("command", SHELL_SYNTAX)
def test_shell_syntax_is_only_text_for_the_allowed_program(ws, command):
    result = _run(ws, command)
    assert not isinstance(result, StructuredError), result
    assert result.output["exit_code"] == 0
    assert result.output["command"][0] == "echo"


REFUSED = [
    "rm keep.txt", "/bin/rm keep.txt", "./rm", "bin/rm", "../bin/echo hi", "/bin/echo hi", "~/echo hi",
    "./echo hi", "sh -c 'touch pwned'", "bash -c 'touch pwned'", "env touch pwned", "FOO=1 touch pwned",
    "PATH=. echo hi", "LD_PRELOAD=/tmp/x.so echo hi", "xargs touch", "sudo echo", "ECHO hi", "Echo hi",
    "echo\x00 hi", ["echo/", "hi"], ["rm", "keep.txt"], ["/usr/bin/env", "touch", "pwned"], "'' hi",
]


@pytest.mark.parametrize("command", REFUSED)
def test_names_outside_the_allow_list_and_paths_are_refused(ws, command):
    result = _run(ws, command)
    assert isinstance(result, StructuredError), result
    assert "allowed" in result.data or "errors" in result.data, result.data


def test_the_defaults_hold_no_shell_or_launcher():
    assert not {"sh", "bash", "zsh", "env", "xargs", "sudo", "su", "find", "nohup", "timeout", "exec"} & set(DEFAULT_ALLOW)


def test_a_configured_allow_list_replaces_the_default(ws):
    assert isinstance(_run(ws, "cat keep.txt", shell_allow=["echo"]), StructuredError)
    assert _run(ws, "echo ok", shell_allow=["echo"]).output["exit_code"] == 0


def test_a_workspace_file_cannot_shadow_an_allowed_name(ws, monkeypatch):
    fake = ws / "echo"
    fake.write_text("#!/bin/sh\ntouch pwned\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    (ws / "bin").mkdir()
    (ws / "bin" / "echo").write_bytes(fake.read_bytes())
    (ws / "bin" / "echo").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", "bin", "./bin", os.environ["PATH"]]))
    result = _run(ws, "echo hi")  # relative PATH entries are dropped: the real echo runs
    assert not isinstance(result, StructuredError) and result.output["exit_code"] == 0
    assert result.artifacts[0].data == b"hi\n"


SECRETS = {
    "OPENAI_API_KEY": "sk-secret-openai", "CLEVERAGENTS_AUTH_TOKENS": "secret-bearer-1,secret-bearer-2",
    "CLEVERAGENTS_API_KEYS": "secret-api-key", "CLEVERAGENTS_A2A_TOKEN": "secret-a2a", "GITHUB_TOKEN": "ghp_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret", "DB_PASSWORD": "db-secret", "MY_CREDENTIALS": "cred-secret",
}


def test_secrets_never_reach_the_child_even_when_named(ws, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    script = "import os, sys; sys.stdout.write(repr(sorted(os.environ.items())))"
    result = _run(ws, ["python3", "-c", script], shell_env=[*SECRETS, "HARMLESS_SETTING"])
    assert result.output["exit_code"] == 0
    log = result.artifacts[0].data.decode()
    assert "visible" in log
    leaked = [name for name, value in SECRETS.items() if value in log]
    assert leaked == [], f"secrets passed to the command: {leaked}"


def test_no_model_is_ever_offered_the_shell():
    from cleveragents.infra.actors.local import READ_ONLY_TOOLS
    from cleveragents.infra.actors.toolbox import EDITING, READ_ONLY

    for offered in (READ_ONLY, EDITING, READ_ONLY_TOOLS):
        assert "shell.run" not in offered  # only a plan step an action file names runs a command


async def test_a_message_to_the_default_actor_cannot_run_a_command(tmp_path):
    import httpx

    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app
    from tests.contract.runners import UvicornServer

    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("OUTSIDE-SECRET\n")
    server = UvicornServer(build_app(settings=Settings(workspace=ws, memory=True)))
    await server.start()
    replies = []
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20, headers={"A2A-Version": "1.0"}) as client:
            for index, text in enumerate(["shell.run touch pwned", "shell.run command='touch pwned'",
                                          "fs.write path=pwned content=x", "fs.read path=../secret.txt",
                                          f"fs.read path={tmp_path}/secret.txt", "fs.glob pattern=../*"]):
                message = {"role": "ROLE_USER", "messageId": f"m-{index}", "parts": [{"text": text}]}
                answer = (await client.post("/a2a", json={"jsonrpc": "2.0", "id": index, "method": "SendMessage",
                                                          "params": {"message": message}})).json()
                replies.append(json.dumps(answer))
    finally:
        await server.stop()
    assert not (ws / "pwned").exists()
    for reply in replies:
        assert "OUTSIDE-SECRET" not in reply
        assert "refused" in reply or "plan" in reply, reply[:500]
