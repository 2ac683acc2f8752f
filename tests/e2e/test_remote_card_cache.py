"""An ``a2a/<url>`` actor reads its agent's card once for as long as the card's own
``Cache-Control: max-age`` says, not before every turn; a card marked ``no-store`` is
read every turn, and a turn that fails to reach the agent drops the card it used."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.contract.runners import UvicornServer
from tests.in_process import in_process


class Agent:
    """A real agent (an in-memory server's) behind a front that serves its card with
    ``cache_control`` and counts the reads. ``move(path)`` moves its JSON-RPC endpoint:
    the old one answers 404, the card names the new one."""

    def __init__(self, real: Any, cache_control: str):
        self.real, self.cache_control = real, cache_control
        self.card: dict[str, Any] = {}
        self.card_reads = 0
        self.path = "/a2a"

    def move(self, path: str) -> None:
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.responses import JSONResponse, Response

        if scope["type"] == "http" and scope["path"].startswith("/.well-known/"):
            self.card_reads += 1
            interfaces = [{**i, "url": i["url"].replace("/a2a", self.path)} for i in self.card["supportedInterfaces"]]
            answer = JSONResponse({**self.card, "supportedInterfaces": interfaces},
                                  headers={"Cache-Control": self.cache_control})
            await answer(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            if scope["path"] != self.path:
                await Response(status_code=404)(scope, receive, send)
                return
            scope = {**scope, "path": "/a2a", "raw_path": b"/a2a"}
        await self.real(scope, receive, send)


@asynccontextmanager
async def agent_and_sender(tmp_path: Path, workspace: Path,
                           cache_control: str) -> AsyncIterator[tuple[Agent, Callable[..., Any]]]:
    """The agent, and ``await send()``: one turn of a session with ``a2a/<its url>``,
    answering its local task."""
    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app

    agent = Agent(build_app(settings=Settings(workspace=tmp_path, memory=True)), cache_control)
    async with UvicornServer(agent) as url:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=agent.real), base_url=url) as real:
            agent.card = (await real.get("/.well-known/agent-card.json")).json()
        async with in_process(workspace) as call:
            session = (await call("session.create", {"actor_name": f"a2a/{url}"}))["result"]["session_id"]
            sent = iter(range(1, 1_000_000))

            async def send() -> dict[str, Any]:
                message = {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": f"m-{next(sent)}",
                           "contextId": session}
                return (await call("SendMessage", {"message": message}))["result"]["task"]

            yield agent, send


def state(task: dict[str, Any]) -> str:
    return str(task["status"]["state"])


async def test_a_card_is_read_once_while_its_max_age_lasts(tmp_path, workspace):
    async with agent_and_sender(tmp_path, workspace, "public, max-age=300") as (agent, send):
        for _ in range(3):
            assert state(await send()) == "TASK_STATE_COMPLETED"
    assert agent.card_reads == 1


async def test_a_card_that_may_not_be_stored_is_read_every_turn(tmp_path, workspace):
    async with agent_and_sender(tmp_path, workspace, "no-store") as (agent, send):
        for _ in range(3):
            assert state(await send()) == "TASK_STATE_COMPLETED"
    assert agent.card_reads == 3


async def test_a_turn_that_cant_reach_the_agent_drops_the_card_it_used(tmp_path, workspace):
    async with agent_and_sender(tmp_path, workspace, "public, max-age=300") as (agent, send):
        assert state(await send()) == "TASK_STATE_COMPLETED"
        agent.move("/moved")
        failed = await send()  # with the card read before the move
        assert state(failed) == "TASK_STATE_FAILED" and "404" in str(failed["status"]), failed["status"]
        assert state(await send()) == "TASK_STATE_COMPLETED"
    assert agent.card_reads == 2
