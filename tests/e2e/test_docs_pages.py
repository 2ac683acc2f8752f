"""The code blocks of the guides run as written.

Each block of these pages is marked: ``<!-- docs:run -->`` blocks are run (Python as a
script, a shell block with bash, a TOML block as a workspace's configuration file
whose default actor must answer, a Lua block as Neovim's init.lua), a
``<!-- docs:output -->`` block after one is what it must print, and
``<!-- docs:skip: why -->`` blocks say why they can't run here. A run block marked
``<!-- docs:run: example NAME -->`` is also an example that other tests import by
``NAME`` (``examples(page)``) and serve. A block marked ``<!-- docs:run: http-server -->``
serves HTTP on port 8000 until stopped: it runs on a free port instead, and must
publish its card and answer a message (with the token it was given or made) before
it is stopped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = ("getting-started.md", "publishing.md", "development/acp-to-a2a-migration.md", "agent-client-protocol.md",
         "security.md", "tracing.md", "grpc.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
MARK = re.compile(r"<!-- docs:(run|output|skip)(?::\s*(.*?))? -->\n\Z")
TIMEOUT = 120


@dataclass
class Block:
    page: str
    line: int
    mark: str | None
    reason: str
    language: str
    text: str
    output: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def example(self) -> str | None:
        """The name a run block is marked with as an example, if any."""
        words = self.reason.split()
        return words[1] if self.mark == "run" and len(words) == 2 and words[0] == "example" else None


def blocks(page: str) -> list[Block]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    found: list[Block] = []
    for fence in FENCE.finditer(text):
        mark = MARK.search(text[:fence.start()])
        found.append(Block(page, text.count("\n", 0, fence.start()) + 1, mark and mark[1],
                           (mark and mark[2]) or "", fence[1], fence[2]))
    runnable = []
    for block in found:
        if block.mark == "output":
            assert runnable and runnable[-1].output is None, f"{block.id}: an output block follows no run block"
            runnable[-1].output = block.text
        elif block.mark == "run":
            runnable.append(block)
    return found


def examples(page: str) -> dict[str, Block]:
    """The blocks of ``page`` marked as examples, by name."""
    named: dict[str, Block] = {}
    for block in blocks(page):
        if block.example is not None:
            assert block.example not in named, f"{block.id}: a second example named {block.example!r}"
            named[block.example] = block
    return named


ALL = [block for page in PAGES for block in blocks(page)]
RUN = [block for block in ALL if block.mark == "run"]


def test_every_block_is_marked():
    unmarked = [b.id for b in ALL if b.mark is None]
    assert not unmarked, f"code blocks with no docs:run/docs:skip/docs:output mark: {unmarked}"
    unexplained = [b.id for b in ALL if b.mark == "skip" and not b.reason]
    assert not unexplained, f"docs:skip blocks must say why: {unexplained}"
    assert {b.page for b in RUN} == set(PAGES)


def environment() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLEVERAGENTS_", "OPENAI_", "OLLAMA_"))}
    # Not the user's own configuration file either: a default actor there would change the answers.
    env["CLEVERAGENTS_USER_CONFIG"] = os.devnull
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return env


def check_config(block: Block, workspace: Path) -> None:
    """The configuration loads, and its default actor answers a message through an
    OpenAI-compatible endpoint (the chat-completions double, in place of the real one)."""
    from cleveragents.infra.actors.resolve import known_providers
    from cleveragents.infra.config_file import USER_CONFIG_ENV, load_config, workspace_config_path
    from tests.fakes.openai_server import FakeOpenAI, Reply

    with FakeOpenAI() as model:
        model.reply(Reply(text="Hello from the model."))
        path = workspace_config_path(workspace)
        path.parent.mkdir(parents=True)
        path.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{model.base_url}"', block.text))
        config = load_config(workspace, known_providers(), {USER_CONFIG_ENV: str(workspace / "none.toml")})
        default = config.defaults["default_actor"]
        declared = config.actors.get(default, {})
        env = {**environment(), "OPENAI_API_KEY": "sk-docs", "CLEVERAGENTS_OPENAI_BASE_URL": model.base_url,
               "CLEVERAGENTS_OLLAMA_BASE_URL": model.base_url}
        done = subprocess.run([str(Path(sys.executable).parent / "agents"), "--workspace", str(workspace),
                               "send", "hello"], capture_output=True, text=True, env=env, timeout=TIMEOUT)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Hello from the model." in done.stdout
        want = declared.get("model") or default.split("/", 1)[1]
        assert model.requests[0]["model"] == want


# After Neovim has started on the block as its init.lua: the plugin's command makes a session.
NVIM_CHECK = """
local ok, err = pcall(function()
  vim.cmd('AgentsSession')
  local agents = require('cleveragents')
  assert(vim.wait(20000, function() return agents.state.session_id ~= nil end, 20), 'no session')
  io.stdout:write('session ', agents.state.session_id, '\\n')
end)
if not ok then
  io.stdout:write(tostring(err), '\\n')
  vim.cmd('cquit 1')
end
vim.cmd('qa!')
"""


def check_init_lua(block: Block, workspace: Path) -> None:
    """The block as Neovim's init.lua, with the clone and its virtualenv where the
    page's placeholders say; the plugin then works."""
    bin_dir = Path(sys.executable).parent
    nvim = bin_dir / "nvim"
    assert nvim.exists(), "no Neovim: the test extra installs one"
    init = workspace / "init.lua"
    init.write_text(block.text.replace("/path/to/cleveragents/.venv/bin", str(bin_dir))
                    .replace("/path/to/cleveragents", str(REPO)))
    (workspace / "check.lua").write_text(NVIM_CHECK)
    home = workspace / "home"
    env = {**environment(), **{f"XDG_{kind}_HOME": str(home / kind) for kind in ("CONFIG", "DATA", "STATE", "CACHE")}}
    done = subprocess.run([str(nvim), "--headless", "-u", str(init), "-i", "NONE", "-n", "-c", "luafile check.lua"],
                          cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0 and "session " in done.stdout, done.stdout + done.stderr


def check_http_server(block: Block, workspace: Path) -> None:
    """The script serves until it is stopped: on a free port in place of 8000 (in
    ``port=8000`` and the URLs alike), its card is public, a call without the token it
    was given (``auth_token=``) or made (printed on stderr) is refused, and with it a
    message is answered."""
    import socket
    import time

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    prefix = (re.search(r'prefix="([^"]*)"', block.text) or [None, ""])[1]
    given = re.search(r'auth_token="([^"]+)"', block.text)
    errors = workspace / "stderr.txt"
    with errors.open("w") as stderr:
        server = subprocess.Popen([sys.executable, "-c", block.text.replace("8000", str(port))], cwd=workspace,
                                  env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=stderr)
    base = f"http://localhost:{port}{prefix}"
    try:
        with httpx.Client(timeout=10) as http:
            deadline = time.monotonic() + TIMEOUT
            while True:
                assert server.poll() is None, f"{block.id} exited:\n{errors.read_text()}"
                assert time.monotonic() < deadline, f"{block.id} never served its card"
                # A token the server makes is printed with "listening on", a moment
                # after it starts answering: without a given token, wait for that line.
                if given or "listening on" in errors.read_text():
                    try:
                        card = http.get(base + "/.well-known/agent-card.json")
                        if card.status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                time.sleep(0.1)
            made = re.search(r"token: (\S+)", errors.read_text())
            token = given[1] if given else made[1] if made else None
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                    "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}}}
            headers = {"A2A-Version": "1.0"}
            if token is not None:
                assert http.post(base + "/a2a", json=body, headers=headers).status_code == 401
                headers["Authorization"] = f"Bearer {token}"
            answer = http.post(base + "/a2a", json=body, headers=headers).json()
            assert "result" in answer, answer
            result = answer["result"]
            assert "message" in result or result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", result
            assert f'"{card.json()["name"]}"' in block.text
    finally:
        server.terminate()
        server.wait(TIMEOUT)


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_the_block_runs(block: Block, tmp_path: Path):
    if block.language == "toml":
        check_config(block, tmp_path)
        return
    if block.language == "lua":
        check_init_lua(block, tmp_path)
        return
    if block.reason == "http-server":
        check_http_server(block, tmp_path)
        return
    from tests.fakes.openai_server import FakeOpenAI, Reply

    command = {"python": [sys.executable, "-c", block.text], "sh": ["bash", "-e", "-c", block.text]}[block.language]
    env = environment()
    names_a_model = block.language == "python" and 'actor="openai/' in block.text
    with FakeOpenAI() as model:
        if names_a_model:  # the chat-completions double answers in the hosted model's place
            model.reply(Reply(text="A reply from the model."))
            env |= {"OPENAI_API_KEY": "sk-docs", "OPENAI_BASE_URL": model.base_url}
        done = subprocess.run(command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"
    if block.output is not None:
        assert done.stdout == block.output
    if names_a_model:
        assert model.requests and done.stdout == "A reply from the model.\n", done.stdout + done.stderr
