"""How a published agent's reply is delivered (artifact, status message, both), a
handler that rejects its task, and what a handler reads of the incoming message: in
process, through the dispatcher the servers share, with a real container and store."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from cleveragents import A2A, Agent, AgentTeam, InputRequired, Message, ReplyAs, TaskRejected
from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.actor import TextChunk
from cleveragents.domain.task import Task, TaskState, TaskStatus

_ids = itertools.count(1)


def message(text: str, version: str = "1.0", **extra: Any) -> dict[str, Any]:
    if version == "0.3":
        return {"message": {"kind": "message", "role": "user", "messageId": f"m-{next(_ids)}",
                            "parts": [{"kind": "text", "text": text}], **extra}}
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{next(_ids)}", "parts": [{"text": text}], **extra}}


@pytest.fixture
async def serve(workspace):
    opened: list[Container] = []

    def serve(agent: Any, reply_as: str | None = None):
        container = Container(Settings(workspace=workspace, memory=True), actor=agent,
                              card=A2A(agent=agent, reply_as=reply_as))
        opened.append(container)
        facade = A2ALocalFacade(container)

        async def call(method: str, version: str = "1.0", **params: Any) -> dict[str, Any]:
            request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            if version == "0.3":
                request["params"] = {**params, "A2A-Version": "0.3"}
            return (await facade.dispatch(request)).to_wire()

        return call

    yield serve
    for container in opened:
        await container.aclose()


def texts(parts: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for part in parts)


async def test_the_default_reply_is_the_response_artifact_and_no_status_message(serve):
    call = serve(Agent(name="Echo", handler=lambda text: f"echo {text}"))
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and "message" not in task["status"]
    assert [(a["name"], texts(a["parts"])) for a in task["artifacts"]] == [("response", "echo hi")]
    assert task["history"][-1]["role"] == "ROLE_AGENT" and texts(task["history"][-1]["parts"]) == "echo hi"


async def test_reply_as_message_gives_the_status_message_and_no_artifact(serve):
    async def chunks(text: str):
        yield "one "
        yield "two"

    call = serve(Agent(name="Quiet", handler=chunks, reply_as="message"))
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert texts(task["status"]["message"]["parts"]) == "one two"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert task.get("artifacts", []) == []
    assert texts(task["history"][-1]["parts"]) == "one two"
    got = (await call("GetTask", id=task["id"]))["result"]
    assert texts(got["status"]["message"]["parts"]) == "one two" and got.get("artifacts", []) == []
    old = (await call("message/send", version="0.3", **message("hi", "0.3")))["result"]
    assert old["status"]["state"] == "completed" and texts(old["status"]["message"]["parts"]) == "one two"
    assert old.get("artifacts", []) == []


async def test_reply_as_both_gives_the_artifact_and_the_status_message(serve):
    call = serve(Agent(name="Both", handler=lambda text: "done", reply_as=ReplyAs.BOTH))
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert texts(task["status"]["message"]["parts"]) == "done"
    assert [texts(a["parts"]) for a in task["artifacts"]] == ["done"]


async def test_a_data_artifact_keeps_its_place_whatever_the_text_reply_does(serve):
    async def report(text: str):
        yield {"count": 3}
        yield "three"

    call = serve(Agent(name="Counter", handler=report, reply_as="message"))
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert [a["parts"] for a in task["artifacts"]] == [[{"data": {"count": 3}}]]
    assert texts(task["status"]["message"]["parts"]) == "three"


async def test_reply_as_message_puts_the_text_before_a_question_in_the_question(serve):
    async def ask(text: str, turn):
        if not turn.history:
            yield "I found two files."
            yield InputRequired("Which one?")
            return
        yield f"Reading {text}."

    call = serve(Agent(name="Asker", handler=ask, reply_as="message"))
    task = (await call("SendMessage", **message("review")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert texts(task["status"]["message"]["parts"]) == "I found two files.\n\nWhich one?"
    assert task.get("artifacts", []) == []
    done = (await call("SendMessage", **message("a.py", taskId=task["id"])))["result"]["task"]
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert texts(done["status"]["message"]["parts"]) == "Reading a.py."


async def test_a_reply_of_many_chunks_is_kept_in_few_parts_and_ends_as_one(serve):
    """Each chunk streams to listeners as its own update; the task holds the text so
    far in few parts (a part per chunk made each append copy all the parts before it),
    and the whole reply as one part once it ends."""
    chunks = 20_000
    midway, go_on = asyncio.Event(), asyncio.Event()

    async def long_reply(text: str):
        for n in range(chunks):
            if n == chunks // 2:
                midway.set()
                await go_on.wait()
            yield "ab"

    call = serve(Agent(name="Long", handler=long_reply))
    sent = (await call("SendMessage", **message("hi"), configuration={"returnImmediately": True}))["result"]["task"]
    await asyncio.wait_for(midway.wait(), 30)
    (artifact,) = (await call("GetTask", id=sent["id"]))["result"]["artifacts"]
    assert texts(artifact["parts"]) == "ab" * (chunks // 2 - 1)  # the last chunk is held until the next comes
    assert len(artifact["parts"]) <= 16, len(artifact["parts"])
    go_on.set()
    for _ in range(300):
        task = (await call("GetTask", id=sent["id"]))["result"]
        if task["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.02)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    (artifact,) = task["artifacts"]
    assert artifact["parts"] == [{"text": "ab" * chunks}]


def test_reply_as_takes_only_the_three_choices():
    with pytest.raises(ValueError, match="'artifact', 'message', 'both'"):
        Agent(name="Bad", handler=lambda text: text, reply_as="email")
    with pytest.raises(ValueError, match="'artifact', 'message', 'both'"):
        A2A(agent=Agent(name="Good", handler=lambda text: text), reply_as="email")
    assert AgentTeam([Agent(name="One")], reply_as="both").reply_as is ReplyAs.BOTH


async def test_a_team_may_reply_with_its_status_message(serve):
    one = Agent(name="One", handler=lambda text: "first")
    two = Agent(name="Two", handler=lambda text: f"after {text}")
    call = serve(AgentTeam([one, two], reply_as="message"))
    task = (await call("SendMessage", **message("go")))["result"]["task"]
    assert texts(task["status"]["message"]["parts"]) == "after first"
    assert [a["name"] for a in task["artifacts"]] == ["One"]  # the steps' outputs stay artifacts


async def test_a_handler_rejects_its_task(serve):
    def picky(text: str) -> str:
        if "delete" in text:
            raise TaskRejected("I don't delete things.")
        return "ok"

    call = serve(Agent(name="Picky", handler=picky))
    task = (await call("SendMessage", **message("delete everything")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert texts(task["status"]["message"]["parts"]) == "I don't delete things."
    assert (await call("GetTask", id=task["id"]))["result"]["status"]["state"] == "TASK_STATE_REJECTED"
    old = (await call("message/send", version="0.3", **message("delete it", "0.3")))["result"]
    assert old["status"]["state"] == "rejected"
    # A rejected task is over: it takes no further message, and can't be cancelled.
    again = await call("SendMessage", **message("please", taskId=task["id"]))
    assert again["error"]["data"][0]["metadata"]["state"] == "rejected"
    assert "error" in await call("CancelTask", id=task["id"])
    # Without a reason, the rejection says so.
    plain = serve(Agent(name="Plain", handler=lambda text: (_ for _ in ()).throw(TaskRejected())))
    task = (await plain("SendMessage", **message("x")))["result"]["task"]
    assert texts(task["status"]["message"]["parts"]) == "The agent rejected the task"


async def test_a_streaming_handler_rejects_after_it_started_and_keeps_what_it_sent(serve):
    async def starts_then_refuses(text: str):
        yield "Looking at it... "
        raise TaskRejected("It is out of scope.")

    call = serve(Agent(name="Scoped", handler=starts_then_refuses))
    task = (await call("SendMessage", **message("x")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert texts(task["artifacts"][0]["parts"]) == "Looking at it... "


async def test_a_resumed_task_may_be_rejected(serve):
    async def ask_then_refuse(text: str, turn):
        if not turn.history:
            return InputRequired("Which branch?")
        raise TaskRejected(f"I won't touch {text}.")

    call = serve(Agent(name="Guard", handler=ask_then_refuse))
    task = (await call("SendMessage", **message("merge")))["result"]["task"]
    done = (await call("SendMessage", **message("main", contextId=task["contextId"])))["result"]["task"]
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_REJECTED"
    assert texts(done["status"]["message"]["parts"]) == "I won't touch main."


def test_a_task_rejected_once_working_is_a_lawful_transition():
    working = Task("t", "c", TaskStatus(TaskState.WORKING, "2026-01-01T00:00:00.000Z"))
    assert working.transition(TaskState.REJECTED, "2026-01-01T00:00:01.000Z").state is TaskState.REJECTED


def test_start_lets_a_rejection_through():
    def refuse(text: str) -> str:
        raise TaskRejected("no")

    with pytest.raises(TaskRejected) as caught:
        Agent(name="No", handler=refuse).start("hi")
    assert caught.value.reason == "no"


async def test_a_handler_reads_the_incoming_message(serve):
    seen: list[Any] = []

    def look(text: str, turn) -> str:
        incoming = turn.message
        seen.append((turn.task_id, turn.context_id, incoming.message_id, incoming.task_id, incoming.context_id,
                     incoming.metadata, [(p.kind, p.text, p.data, p.url, p.raw, p.filename, p.media_type)
                                         for p in incoming.parts]))
        return "seen"

    call = serve(Agent(name="Reader", handler=look))
    sent = {"role": "ROLE_USER", "messageId": "m-read", "contextId": "ctx-read", "metadata": {"from": "editor"},
            "parts": [{"text": "look"}, {"data": {"n": 1}},
                      {"url": "https://example.com/a.txt", "filename": "a.txt", "mediaType": "text/plain"},
                      {"raw": "aGk=", "filename": "b.bin", "mediaType": "application/octet-stream"}]}
    task = (await call("SendMessage", message=sent))["result"]["task"]
    ((task_id, context_id, message_id, in_task, in_context, metadata, parts),) = seen
    assert (task_id, context_id, message_id, in_task, in_context) == (
        task["id"], "ctx-read", "m-read", task["id"], "ctx-read")
    assert metadata == {"from": "editor"}
    assert parts == [("text", "look", None, None, None, None, None), ("data", None, {"n": 1}, None, None, None, None),
                     ("file", None, None, "https://example.com/a.txt", None, "a.txt", "text/plain"),
                     ("file", None, None, None, b"hi", "b.bin", "application/octet-stream")]


async def test_the_reply_choice_reaches_the_store_as_it_was_sent(serve):
    """A restart reads back what a client saw: the status message is stored."""
    call = serve(Agent(name="Quiet", handler=lambda text: "kept", reply_as="message"))
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    listed = (await call("ListTasks", includeArtifacts=True))["result"]["tasks"]
    assert [(t["id"], texts(t["status"]["message"]["parts"])) for t in listed] == [(task["id"], "kept")]



async def test_any_actor_chooses_with_a_reply_as_attribute(serve):
    class Plain:
        name = "plain"
        reply_as = "message"  # the value works as well as ReplyAs.MESSAGE

        async def respond(self, turn):
            yield TextChunk("plain reply")

    call = serve(Plain())
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert texts(task["status"]["message"]["parts"]) == "plain reply" and task.get("artifacts", []) == []
    Plain.reply_as = "nonsense"  # not a choice: the default
    task = (await call("SendMessage", **message("hi")))["result"]["task"]
    assert [a["name"] for a in task["artifacts"]] == ["response"] and "message" not in task["status"]


def test_start_returns_the_text_of_a_message_reply():
    assert Agent(name="Greeter", handler=lambda text: Message("hi there")).start("hello") == "hi there"


@pytest.mark.parametrize(("endpoint", "as_artifact", "as_message"), [
    (None, True, True), ("artifact", True, False), ("message", False, True), ("both", True, True)])
async def test_the_endpoint_chooses_over_the_agent(serve, endpoint, as_artifact, as_message):
    """``A2A(reply_as=...)`` delivers every text reply its way; unset, the agent's ``both`` holds."""
    agent = Agent(name="Both", handler=lambda text: f"echo {text}", reply_as="both")
    task = (await serve(agent, endpoint)("SendMessage", **message("hi")))["result"]["task"]
    assert [a["name"] for a in task.get("artifacts", [])] == (["response"] if as_artifact else [])
    assert ("message" in task["status"]) is as_message
    assert texts(task["history"][-1]["parts"]) == "echo hi"


async def test_the_endpoint_chooses_for_a_team(serve):
    team = AgentTeam([Agent(name="One", handler=lambda text: "first"), Agent(name="Two", handler=lambda text: "last")])
    task = (await serve(team, "message")("SendMessage", **message("go")))["result"]["task"]
    assert texts(task["status"]["message"]["parts"]) == "last"
    assert [a["name"] for a in task["artifacts"]] == ["One"]
