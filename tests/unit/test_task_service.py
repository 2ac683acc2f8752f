"""The task service's races and edges, in process with a real container and store."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.actor import InputRequired, TextChunk, Turn


class AskingActor:
    """Asks for input on a first turn; answers the second after a short pause."""

    name = "test/asking"

    async def respond(self, turn: Turn):
        if not turn.history:
            yield InputRequired("Which file?")
            return
        await asyncio.sleep(0.05)
        yield TextChunk(f"Reading {turn.message.text()}.")


@pytest.fixture
async def call(workspace):
    container = Container(Settings(workspace=workspace), actor=AskingActor())
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    call.facade = facade  # type: ignore[attr-defined]
    yield call
    await container.aclose()


_message_ids = itertools.count(1)


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{next(_message_ids)}", "parts": [{"text": text}],
                        **extra}}


async def waiting_task(call) -> dict[str, Any]:
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


async def test_a_cancel_during_a_resume_wins_and_stays(call):
    for attempt in range(24):
        task = await waiting_task(call)
        resume = asyncio.ensure_future(call("SendMessage", **message("a.py", taskId=task["id"])))
        for _ in range(attempt % 4):  # land the cancel at different points of the resume
            await asyncio.sleep(0)
        cancelled = await call("CancelTask", id=task["id"])
        answered = await resume
        assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        if "error" in answered:  # the cancel came first: a canceled task takes no message
            assert answered["error"]["code"] == -32004
        else:  # the cancel came while the message was being taken
            assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_CANCELED"
        await asyncio.sleep(0.1)  # longer than the actor takes
        assert (await call("GetTask", id=task["id"]))["result"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_two_messages_cannot_resume_one_task_at_once(call):
    task = await waiting_task(call)
    first, second = await asyncio.gather(call("SendMessage", **message("a.py", taskId=task["id"])),
                                         call("SendMessage", **message("b.py", taskId=task["id"])))
    outcomes = sorted(("result" in r) for r in (first, second))
    assert outcomes == [False, True]
    refused = first if "error" in first else second
    assert refused["error"]["code"] == -32004
    history = (await call("GetTask", id=task["id"]))["result"]["history"]
    assert len(history) == 4  # hi, the question, one answer, one reply


async def test_subscribing_to_a_waiting_task_follows_it_once_resumed(call):
    task = await waiting_task(call)
    items = await call.facade.services["task_service"].service.subscribe(task["id"])
    first = (await anext(items)).item
    assert first.state.value == "input-required"
    await call("SendMessage", **message("a.py", taskId=task["id"]))
    rest = [event.item async for event in items]
    assert rest[-1].status.state.value == "completed" and rest[-1].final


@pytest.mark.parametrize("params", [{"statusTimestampAfter": 12345}, {"statusTimestampAfter": []},
                                    {"includeArtifacts": "false"}, {"historyLength": -1}])
async def test_list_params_are_checked(call, params):
    assert (await call("ListTasks", **params))["error"]["code"] == -32602


async def test_a_lone_surrogate_is_a_parse_error_not_a_crash(call):
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
                       "params": message("x", contextId="\ud800")}).encode()
    answer = await call.facade.handle_raw(body)
    assert answer["error"]["code"] == -32700 and answer["error"]["data"] == {"escape": "\\ud800"}


async def test_sends_cancelled_while_their_task_is_stored_leave_no_task_unowned(call):
    """A cancel that lands while the new task's write runs used to leave it stored as
    submitted, with nothing to finish it."""
    for steps in range(12):
        sends = [asyncio.ensure_future(call("SendMessage", **message(f"m{steps}-{n}"))) for n in range(40)]
        for _ in range(steps):  # cancel at different points of the sends
            await asyncio.sleep(0.0005)
        for send in sends:
            send.cancel()
        await asyncio.gather(*sends, return_exceptions=True)
    await asyncio.sleep(0.2)  # what a cancel put back is stored by now
    listed = (await call("ListTasks", pageSize=100))["result"]
    while True:
        states = {task["status"]["state"] for task in listed["tasks"]}
        assert states <= {"TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED"}, states
        if not listed["nextPageToken"]:
            break
        listed = (await call("ListTasks", pageSize=100, pageToken=listed["nextPageToken"]))["result"]


async def test_a_blocking_send_answers_with_its_task_when_another_call_cancels_it(call):
    """The send works on its task in its own asyncio task, which the cancel reaches:
    the cancel is taken back there, so the caller gets the canceled task and can go on."""
    task = await waiting_task(call)

    async def send() -> dict[str, Any]:
        answered = await call("SendMessage", **message("a.py", taskId=task["id"]))
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0
        await asyncio.sleep(0)  # not cancelled again
        return answered

    sending = asyncio.ensure_future(send())
    await asyncio.sleep(0.01)  # the actor is working (it takes 0.05 s)
    assert (await call("CancelTask", id=task["id"]))["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    answered = await sending
    assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert (await call("GetTask", id=task["id"]))["result"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_a_blocking_send_whose_caller_is_cancelled_cancels_its_task(call):
    task = await waiting_task(call)
    sending = asyncio.ensure_future(call("SendMessage", **message("a.py", taskId=task["id"])))
    await asyncio.sleep(0.01)  # the actor is working
    sending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sending
    await asyncio.sleep(0.1)  # longer than the actor takes: no late result lands
    got = (await call("GetTask", id=task["id"]))["result"]
    assert got["status"]["state"] == "TASK_STATE_CANCELED" and "artifacts" not in got


class SlowActor:
    """Works for a while on every message."""

    name = "test/slow"

    async def respond(self, turn: Turn):
        await asyncio.sleep(0.4)
        yield TextChunk("done")


async def test_a_long_blocking_send_is_listed_while_it_works_and_a_short_one_once_it_ends(workspace):
    """A blocking send's task is written when it ends; one that works on past a moment
    is written as it is then, so other clients see it."""
    container = Container(Settings(workspace=workspace), actor=SlowActor())
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    try:
        sending = asyncio.ensure_future(call("SendMessage", **message("slow", contextId="ctx-slow")))
        await asyncio.sleep(0.25)
        listed = (await call("ListTasks", contextId="ctx-slow"))["result"]["tasks"]
        assert [task["status"]["state"] for task in listed] == ["TASK_STATE_WORKING"]
        answered = (await sending)["result"]["task"]
        assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
        listed = (await call("ListTasks", contextId="ctx-slow"))["result"]["tasks"]
        assert [(task["id"], task["status"]["state"]) for task in listed] == [(answered["id"], "TASK_STATE_COMPLETED")]
    finally:
        await container.aclose()
