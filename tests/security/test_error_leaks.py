"""Errors a client gets never carry a traceback or a server path; the traceback goes
to stderr, under the error id the client is given.

The same failures are forced through the stdio server (a subprocess) and the HTTP
app (real uvicorn): Python actors that raise an OS error naming an absolute path,
one whose module fails to import that way, and a plain bug; a parse error; refused
tool paths. Every string in every answer is searched for a traceback, the server's
source directory, the interpreter's prefix and the paths the failures named.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

import cleveragents
from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app
from tests.contract.runners import UvicornServer
from tests.e2e.rawclient import RawServer

PRIVATE = "/srv/cleveragents-private"
AGENT = f'''
def missing_file(text):
    open("{PRIVATE}/notes.txt")

def permission(text):
    raise PermissionError(13, "Permission denied", "{PRIVATE}/id_rsa", None, "{PRIVATE}/other")

def chained(text):
    try:
        open("{PRIVATE}/config.toml")
    except OSError as exc:
        raise KeyError("no config") from exc

def bug(text):
    return {{}}["missing"]
'''
BROKEN = f'open("{PRIVATE}/at-import.txt")\n'
ACTORS = ["leaky_agent:missing_file", "leaky_agent:permission", "leaky_agent:chained", "leaky_agent:bug",
          "leaky_broken:anything"]


def _forbidden(tmp_path: Path) -> list[str]:
    return ["Traceback", 'File "', PRIVATE, str(tmp_path), str(Path(cleveragents.__file__).parent.parent),
            sys.prefix, "site-packages"]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _assert_clean(answer: Any, forbidden: list[str], what: str) -> None:
    for text in _strings(answer):
        for bad in forbidden:
            assert bad not in text, f"{what}: {bad!r} leaked in {text!r}"


@pytest.fixture
def agents_on_path(tmp_path, monkeypatch):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "leaky_agent.py").write_text(textwrap.dedent(AGENT))
    (modules / "leaky_broken.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.setenv("PYTHONPATH", str(modules))
    for name in ("leaky_agent", "leaky_broken"):
        sys.modules.pop(name, None)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "file.txt").write_text("x\n")
    return ws


def _message(text: str, context_id: str | None = None) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}
    return {"message": {**message, "contextId": context_id} if context_id else message}


async def _session_then_send(call, actor: str) -> list[Any]:
    """The answers of creating a session with ``actor`` and sending it a message."""
    created = await call("session.create", {"actor_name": f"python/{actor}"})
    if "error" in created:
        return [created]
    sent = await call("SendMessage", _message("hi", created["result"]["session_id"]))
    return [created, sent]


async def _calls(call) -> list[tuple[str, Any]]:
    answers: list[tuple[str, Any]] = []
    for actor in ACTORS:
        for answer in await _session_then_send(call, actor):
            answers.append((actor, answer))
            if "result" in answer and "task" in answer["result"]:
                task = answer["result"]["task"]
                assert task["status"]["state"] == "TASK_STATE_FAILED", (actor, task)
                assert task["status"]["message"]["parts"][0]["text"], "the reason is given"
            elif "error" in answer:
                assert answer["error"]["message"], answer
    answers.append(("GetTask", await call("GetTask", {"id": "nope"})))
    answers.append(("plan/use", await call("_cleveragents/plan/use", {"action": "/etc/passwd"})))
    return answers


async def test_stdio_answers_carry_no_traceback_or_server_path(agents_on_path, tmp_path):
    server = await RawServer.start("--memory", "--workspace", str(agents_on_path), "--log-level", "INFO")
    try:
        await server.initialize()
        counter = iter(range(100, 1000))

        async def call(method: str, params: Any) -> Any:
            return await server.request(next(counter), method, params)

        answers = await _calls(call)
        server.send(b"Content-Length: 9\r\n\r\n{not json")
        answers.append(("parse", await server.read_message()))
    finally:
        server.close_stdin()
        _, stderr = await server.proc.communicate()
    for what, answer in answers:
        _assert_clean(answer, _forbidden(tmp_path), what)
    log = stderr.decode(errors="replace")
    assert "Traceback" in log and PRIVATE in log, "the detail belongs in the server's log"


async def test_http_answers_carry_no_traceback_or_server_path(agents_on_path, tmp_path):
    server = UvicornServer(build_app(settings=Settings(workspace=agents_on_path, memory=True)))
    await server.start()
    answers: list[tuple[str, Any]] = []
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20, headers={"A2A-Version": "1.0"}) as client:
            async def call(method: str, params: Any) -> Any:
                response = await client.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
                return response.json()

            answers += await _calls(call)
            answers.append(("parse", (await client.post("/a2a", content=b"{not json")).json()))
            for path in ["/tasks/nope", "/tasks?pageSize=-1", "/extendedAgentCard"]:
                answers.append((path, (await client.get(path)).json()))
            bad = await client.post("/message:send", content=b"[1,2", headers={"Content-Type": "application/json"})
            answers.append(("rest parse", bad.json()))
    finally:
        await server.stop()
    for what, answer in answers:
        _assert_clean(answer, _forbidden(tmp_path), what)
    assert json.dumps(answers)  # every answer was JSON


# -- services that cannot start: a bad configuration file, a state directory that is a file --
def _broken_workspaces(tmp_path: Path) -> list[Settings]:
    bad_config = tmp_path / "bad-config"
    (bad_config / ".cleveragents").mkdir(parents=True)
    (bad_config / ".cleveragents" / "config.toml").write_text("defaults = [\n")
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    return [Settings(workspace=bad_config, memory=True), Settings(workspace=tmp_path, state_dir=blocker)]


async def test_http_services_that_cannot_start_answer_an_error_id_only(tmp_path, monkeypatch, caplog):
    from starlette.applications import Starlette
    from starlette.routing import Mount

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for settings in _broken_workspaces(tmp_path):
        # Mounted in another app, ours gets no lifespan: the first request finds the services down.
        server = UvicornServer(Starlette(routes=[Mount("/", build_app(settings=settings))]))
        await server.start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
                rpc = await client.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"})
                rest = await client.get("/tasks")
        finally:
            await server.stop()
        assert rpc.status_code == 503 and rpc.json()["error"]["code"] == -32603
        error_id = rpc.json()["error"]["data"]["error_id"]
        assert rest.status_code == 500 and rest.json()["error"]["status"] == "INTERNAL"
        for answer in (rpc.json(), rest.json()):
            _assert_clean(answer, [*_forbidden(tmp_path), "config.toml"], str(settings.workspace))
        assert any(error_id in record.getMessage() and record.exc_info for record in caplog.records)


def test_a_served_http_app_with_a_bad_configuration_does_not_start(tmp_path):
    import subprocess

    settings = _broken_workspaces(tmp_path)[0]
    env = {**__import__("os").environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, "-m", "cleveragents.transports.http", "--memory", "--workspace",
                           str(settings.workspace), "--port", "0"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode != 0 and "listening on" not in done.stderr
    assert "config.toml" in done.stderr  # the owner reads the cause on the console


async def test_stdio_names_the_users_own_bad_configuration_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    settings = _broken_workspaces(tmp_path)[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = await RawServer.start("--memory", cwd=elsewhere)  # the workspace comes with initialize
    try:
        await server.initialize(rootUri=settings.workspace.as_uri())
        answer = await server.request(1, "session.create", {})
    finally:
        server.close_stdin()
        await server.proc.communicate()
    assert answer["error"]["code"] == -32602
    assert "Traceback" not in json.dumps(answer)
    # The editor's user owns the file: naming it (and its line) is what makes the error useful.
    assert answer["error"]["data"]["file"].endswith("config.toml")
