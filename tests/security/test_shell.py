"""``shell.run`` allow-list bypass attempts: shell syntax, env tricks, path tricks,
a workspace file shadowing an allowed name, and secrets in the child's environment.

The command never goes through a shell, so shell syntax is only ever text handed to
the allowed program; these tests prove it by the marker file each attack would
create. An allowed program's own launcher options (``python -c``, ``git -c
alias.x=!cmd``, ``make --eval``, ...) and arguments naming paths outside the
workspace are refused too, even when the allow-list names the bare program.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from cleveragents.domain.errors import StructuredError
from cleveragents.domain.tools import ToolContext
from cleveragents.infra.tools.builtin import builtin_tools
from cleveragents.infra.tools.shell import DEFAULT_ALLOW
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.overlay import Overlay

SHELL = next(tool for tool in builtin_tools() if tool.name == "shell.run")


VIEWS: dict[Path, Overlay] = {}


def _run(ws: Path, command, **settings):
    """Run ``command`` as a plan step would: in the sandbox, on an overlay of ``ws``."""
    view = VIEWS.setdefault(ws, Overlay(ws, BlobStore(ws.parent / "blobs")))
    context = ToolContext(view=view, workspace=str(ws), settings=settings)
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
    view = VIEWS.pop(root, None)
    changed = view.changed_paths() if view is not None else []
    assert not (root / "pwned").exists() and "pwned" not in changed, "an attack ran a second command"
    assert (root / "keep.txt").exists() and "keep.txt" not in changed, "an attack removed a file"


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


# Each would run a command of its arguments (most would create `pwned`).
LAUNCHER_OPTIONS = [
    "python -c 'open(\"pwned\", \"w\")'", "python3 -Ic 'open(\"pwned\", \"w\")'", "python -cimport\\ os",
    "python -m timeit 'open(\"pwned\", \"w\")'", "python -mtimeit x", "python -W ignore -c 'open(\"pwned\", \"w\")'",
    "python -B -c x", "python3 -Sm pdb x",
    "node -e 'require(\"fs\").writeFileSync(\"pwned\", \"\")'", "node --eval=x", "node -pe x", "node --require ./x.js",
    "node --title x -e code", "node --import=./x.mjs y.js", "node -r ./x y.js",
    "git -c alias.x='!touch pwned' x", "git -calias.x=!touch\\ pwned x", "git --config-env=core.pager=X log",
    "git -C . -c core.pager='touch pwned' log", "git --exec-path=. x", "git config alias.x '!touch pwned'",
    "git grep -O'touch pwned' keep", "git grep --open-files-in-pager='touch pwned' keep",
    "git ls-remote --upload-pack='touch pwned' .", "git fetch --upload-pack 'touch pwned' .",
    "git push --receive-pack='touch pwned' .", "git bisect run touch pwned", "git submodule foreach touch pwned",
    "git difftool --extcmd='touch pwned'", "git rebase --exec 'touch pwned' HEAD", "git rebase -x 'touch pwned' HEAD",
    "git archive --exec='touch pwned' --remote=. HEAD", "git clone -u 'touch pwned' . copy",
    "make --eval='x:;touch pwned' x", "make -E 'x:;touch pwned' x", "make SHELL=/bin/sh", "make CC='touch pwned'",
    "make X:=1", "make 'X != touch pwned'", "make test X+=y",
    "npm exec touch pwned", "npm x -- touch pwned", "npm run x --script-shell=/bin/sh",
    "npm test --node-options=--require=./x.js", "npm run x -c 'touch pwned'", "npm install", "npm explore x",
    "find . -exec touch pwned ;", "find . -execdir touch pwned ;", "find . -delete", "find . -fprint pwned",
]
BARE_PROGRAMS = ["python", "python3", "node", "git", "make", "npm", "find"]


@pytest.mark.parametrize("command", LAUNCHER_OPTIONS)
def test_launcher_options_are_refused_even_when_the_bare_program_is_allowed(ws, command):
    result = _run(ws, command, shell_allow=BARE_PROGRAMS)
    assert isinstance(result, StructuredError), result
    assert result.data["reason"] == "runs_code", result.data
    assert result.data["argument"] in shlex.split(command), result.data


@pytest.mark.parametrize("command", LAUNCHER_OPTIONS)
def test_launcher_options_are_refused_by_the_default_allow_list(ws, command):
    result = _run(ws, command)
    assert isinstance(result, StructuredError), result
    assert result.data["reason"] in {"not_allowed", "runs_code"}, result.data


def test_a_prefix_that_names_the_option_allows_it(ws):
    assert isinstance(_run(ws, "python3 -c 'print(1)'", shell_allow=["python3"]), StructuredError)
    allowed = _run(ws, "python3 -c 'print(1)'", shell_allow=["python3 -c"])
    assert allowed.output["exit_code"] == 0 and allowed.artifacts[0].data == b"1\n"


@pytest.fixture
def outside(ws):
    """A secret beside the workspace, and links to it from inside."""
    secret = ws.parent / "secret.txt"
    secret.write_text("OUTSIDE-SECRET\n")
    (ws / "link.txt").symlink_to(secret)
    (ws / "linkdir").symlink_to(ws.parent, target_is_directory=True)
    (ws / "sub").mkdir()
    return secret


OUTSIDE_PATHS = [
    "cat ../secret.txt", "cat {secret}", "cat link.txt", "cat linkdir/secret.txt", "cat sub/../../secret.txt",
    "cat /etc/passwd", "grep -r SECRET ..", "grep -r SECRET /", "grep -f{secret} x", "grep --file=../secret.txt x",
    "grep -e x ../secret.txt", "ls ..", "ls linkdir", "git diff --no-index ../secret.txt keep.txt",
    "git log --git-dir=../x", "git log --output=../out", "python -m pytest --rootdir=/ -q", "cat ./sub/../link.txt",
    "make -Clinkdir", "make -flinkdir/Makefile", "grep -flink.txt x", "grep -flinkdir/secret.txt x",
]


@pytest.mark.parametrize("command", OUTSIDE_PATHS)
def test_arguments_naming_paths_outside_the_workspace_are_refused(ws, outside, command):
    result = _run(ws, command.format(secret=outside))
    assert isinstance(result, StructuredError), result
    assert result.data["reason"] == "outside_workspace", result.data
    assert "OUTSIDE-SECRET" not in json.dumps(result.data)


ALLOWED = [
    ("cat keep.txt", b"keep\n"), ("cat sub/../keep.txt", b"keep\n"), ("grep -r keep keep.txt sub", b"keep.txt:keep\n"),
    ("grep keep --include=*.txt -r --exclude-dir=.git .", b"./keep.txt:keep\n"), ("echo TODO", b"TODO\n"), ("ls sub", b""),
    ("python3 tool.py --count 3", b"['--count', '3']\n"), ("git -C . status --porcelain", None), ("git status --short", None),
]


@pytest.mark.parametrize(("command", "output"), ALLOWED)
def test_ordinary_commands_inside_the_workspace_still_run(ws, outside, command, output):
    (ws / "tool.py").write_text("import sys\nprint(sys.argv[1:])\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    result = _run(ws, command, shell_allow=[*DEFAULT_ALLOW, "python3", "git"])
    assert not isinstance(result, StructuredError), result
    assert result.output["exit_code"] == 0, result.artifacts[0].data
    if output is not None:
        assert result.artifacts[0].data == output


def test_the_defaults_hold_no_shell_or_launcher():
    launchers = {"sh", "bash", "zsh", "env", "xargs", "sudo", "su", "find", "nohup", "timeout", "exec",
                 "git", "python", "python3", "node", "npm", "npx", "python -c", "python3 -c", "npm exec"}
    assert not launchers & set(DEFAULT_ALLOW)


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
    result = _run(ws, ["python3", "-c", script], shell_allow=["python3 -c"], shell_env=[*SECRETS, "HARMLESS_SETTING"])
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
