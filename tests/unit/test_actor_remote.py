"""``a2a/<url>`` actors against a real a2a-sdk server (in a thread, on 127.0.0.1):
streaming relayed, input-required relayed and answered, a failed remote task and an
unreachable agent as clear failures."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from tests.fakes.a2a_agent import serving


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    with serving() as base:
        yield base


@pytest.fixture
async def call(workspace):
    # The remote client's wait between two stream events: the "wait" task sends none
    # until it is cancelled, so a loaded machine must not time it out first.
    container = Container(Settings(workspace=workspace, memory=True, actor_timeout=60))
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    yield call
    await container.aclose()


async def send(call, method: str, context_id: str, text: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "parts": [{"text": text}], "messageId": f"m-{text}-{time.monotonic()}",
               "contextId": context_id, **extra}
    return (await call(method, message=message))["result"]


def text_of(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


async def session(call, url: str) -> str:
    return (await call("session.create", actor_name=f"a2a/{url}"))["result"]["session_id"]


async def test_a_remote_agents_stream_is_relayed(call, remote):
    sid = await session(call, remote)
    task = (await send(call, "SendMessage", sid, "ping"))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and text_of(task) == "remote: ping"
    assert len(task["artifacts"]) == 1  # the remote chunks became one streamed reply


async def test_input_required_is_relayed_and_the_answer_goes_to_the_remote_task(call, remote):
    sid = await session(call, remote)
    asked = (await send(call, "SendMessage", sid, "ask"))["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert asked["status"]["message"]["parts"][0]["text"] == "Which colour?"
    answered = (await send(call, "SendMessage", sid, "blue", taskId=asked["id"]))["task"]
    assert answered["id"] == asked["id"] and answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert text_of(answered) == "remote: blue"


async def test_a_failed_remote_task_and_an_unreachable_agent_fail_clearly(call, remote):
    failed = (await send(call, "SendMessage", await session(call, remote), "fail"))["task"]
    assert failed["status"]["state"] == "TASK_STATE_FAILED"
    assert "the remote task is failed: no can do" in failed["status"]["message"]["parts"][0]["text"]
    gone = (await send(call, "SendMessage", await session(call, "http://127.0.0.1:9"), "hi"))["task"]
    assert gone["status"]["state"] == "TASK_STATE_FAILED"
    assert gone["status"]["message"]["parts"][0]["text"].startswith("ActorError: a2a/http://127.0.0.1:9")
    bad = await call("session.create", actor_name="a2a/ftp-nope")
    assert bad["error"]["code"] == -32602


async def test_a_rejected_remote_task_rejects_ours(call, remote):
    rejected = (await send(call, "SendMessage", await session(call, remote), "reject"))["task"]
    assert rejected["status"]["state"] == "TASK_STATE_REJECTED"
    assert rejected["status"]["message"]["parts"][0]["text"] == f"a2a/{remote}: not my job"


async def test_cancelling_the_task_cancels_the_remote_task(call, remote):
    from cleveragents.a2a.client import ServerConnectionConfig
    from cleveragents.a2a.client_http import A2AClient
    from cleveragents.domain.task import TaskState

    def waiting(tasks):
        return [t for t in tasks if any(p.text == "wait" for m in t.history for p in m.parts)]

    sid = await session(call, remote)
    message = {"role": "ROLE_USER", "parts": [{"text": "wait"}], "messageId": "m-wait", "contextId": sid}
    started = (await call("SendMessage", message=message, configuration={"returnImmediately": True}))["result"]
    async with A2AClient(ServerConnectionConfig(url=remote, token="anonymous")) as client:
        deadline = time.monotonic() + 30
        while not (remote_tasks := waiting((await client.list()).tasks)):  # until the remote agent works on it
            assert time.monotonic() < deadline, "the remote agent never got the task"
            await asyncio.sleep(0.02)
        cancelled = (await call("CancelTask", id=started["task"]["id"]))["result"]
        assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
        deadline = time.monotonic() + 30
        while remote_tasks[0].status.state is not TaskState.CANCELED and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            remote_tasks = waiting((await client.list()).tasks)
    [remote_task] = remote_tasks
    assert remote_task.status.state is TaskState.CANCELED


async def test_a_turn_stopped_over_its_limit_cancels_the_remote_task(call, remote):
    """The remote agent would otherwise go on working for a turn that is over."""
    from cleveragents.a2a.client import ServerConnectionConfig
    from cleveragents.a2a.client_http import A2AClient
    from cleveragents.domain.task import TaskState

    task = (await send(call, "SendMessage", await session(call, remote), "flood"))["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["metadata"]["error"]["data"]["limit"] == "max_reply_chars", task["metadata"]
    async with A2AClient(ServerConnectionConfig(url=remote, token="anonymous")) as client:
        deadline = time.monotonic() + 30
        while True:
            (flooding,) = [t for t in (await client.list()).tasks
                           if any(p.text == "flood" for m in t.history for p in m.parts)]
            if flooding.status.state is TaskState.CANCELED or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
    assert flooding.status.state is TaskState.CANCELED, flooding.status


async def test_text_with_unicode_line_separators_comes_back_whole(call, remote):
    """The SDK's server writes U+2028 and its kin unescaped in its SSE data lines:
    they are text, not line endings."""
    text = "one\u2028two\u2029three\x85four"
    sid = await session(call, remote)
    task = (await send(call, "SendMessage", sid, text))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    assert text_of(task) == f"remote: {text}"
