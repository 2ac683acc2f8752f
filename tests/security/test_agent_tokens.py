"""Which token each remote agent gets.

A remote agent is untrusted, so it must never see a credential meant for another. An
``a2a`` actor declared with ``api_key_env`` sends the token in that variable to its
agent alone; ``CLEVERAGENTS_A2A_TOKEN`` goes only to agents declared without one.
The declaration is docs/actors.md's own example.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.conftest import REPO
from tests.contract.runners import UvicornServer
from tests.in_process import in_process

SHARED, OWN = "shared-a2a-token-5e1f", "own-agent-token-77c2"


@asynccontextmanager
async def recording_agent(workspace: Path) -> AsyncIterator[tuple[str, list[str | None]]]:
    """A real agent (an in-memory server's) and the ``Authorization`` of each call to it."""
    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app

    real = build_app(settings=Settings(workspace=workspace, memory=True))
    seen: list[str | None] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            seen.append(dict(scope["headers"]).get(b"authorization", b"").decode() or None)
        await real(scope, receive, send)

    async with UvicornServer(app) as url:
        yield url, seen


def documented_declaration(url: str) -> str:
    """docs/actors.md's ``a2a`` actor with its own token, naming the agent at ``url``."""
    page = (REPO / "docs" / "actors.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", page, re.S)
    assert block is not None and 'provider = "a2a"' in block[1], "docs/actors.md lost its a2a example"
    return re.sub(r'model = "[^"]*"', f'model = "{url}"', block[1])


async def test_each_agent_gets_its_own_token_and_no_other(tmp_path, workspace, monkeypatch):
    monkeypatch.setenv("CLEVERAGENTS_A2A_TOKEN", SHARED)
    monkeypatch.setenv("HELPER_A2A_TOKEN", OWN)
    monkeypatch.delenv("UNSET_AGENT_TOKEN", raising=False)
    for name in ("own", "shared", "unset"):
        (tmp_path / name).mkdir()
    async with recording_agent(tmp_path / "own") as (own_url, own_seen), \
            recording_agent(tmp_path / "shared") as (shared_url, shared_seen), \
            recording_agent(tmp_path / "unset") as (unset_url, unset_seen):
        (workspace / ".cleveragents").mkdir(exist_ok=True)
        (workspace / ".cleveragents" / "config.toml").write_text(
            documented_declaration(own_url) +
            f'[actors."team/shared"]\nprovider = "a2a"\nmodel = "{shared_url}"\n'
            f'[actors."team/unset"]\nprovider = "a2a"\nmodel = "{unset_url}"\napi_key_env = "UNSET_AGENT_TOKEN"\n')
        async with in_process(workspace) as call:
            for actor in ("team/helper", "team/shared", "team/unset"):
                session = (await call("session.create", {"actor_name": actor}))["result"]["session_id"]
                message = {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": f"m-{actor}",
                           "contextId": session}
                task = (await call("SendMessage", {"message": message}))["result"]["task"]
                assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    assert own_seen and set(own_seen) == {f"Bearer {OWN}"}, own_seen
    assert shared_seen and set(shared_seen) == {f"Bearer {SHARED}"}, shared_seen
    assert unset_seen and set(unset_seen) == {None}, unset_seen


async def test_without_the_shared_token_an_undeclared_agent_gets_no_credential(tmp_path, workspace, monkeypatch):
    """No ``CLEVERAGENTS_A2A_TOKEN``: an agent named only as ``a2a/<url>`` is called
    without an ``Authorization`` header, not with a made-up token."""
    monkeypatch.delenv("CLEVERAGENTS_A2A_TOKEN", raising=False)
    async with recording_agent(tmp_path) as (url, seen):
        async with in_process(workspace) as call:
            session = (await call("session.create", {"actor_name": f"a2a/{url}"}))["result"]["session_id"]
            message = {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": "m-bare", "contextId": session}
            task = (await call("SendMessage", {"message": message}))["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    assert seen and set(seen) == {None}, seen
