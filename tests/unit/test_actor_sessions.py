"""Actors chosen by session, python actors, and budgets: in process, with a real
container, store and the fake chat-completions server."""

from __future__ import annotations

from typing import Any

import pytest

from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from tests.fakes.openai_server import FakeOpenAI, Reply

INVALID_PARAMS, BUDGET = -32602, -32006


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def call(workspace, fake):
    container = Container(Settings(workspace=workspace, memory=True, openai_base_url=fake.base_url,
                                   plan_max_tokens=40))
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    yield call
    await container.aclose()


async def session(call, actor: str, **params: Any) -> str:
    response = await call("session.create", actor_name=actor, **params)
    return response["result"]["session_id"]


async def send(call, context_id: str, text: str) -> dict[str, Any]:
    response = await call("SendMessage", message={"role": "ROLE_USER", "parts": [{"text": text}],
                                                  "messageId": f"m-{text}", "contextId": context_id})
    return response


def reply_text(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


async def test_a_session_message_is_answered_by_the_sessions_actor(call, fake):
    fake.reply(Reply(text="model says hi"))
    sid = await session(call, "openai/gpt-4o")
    task = (await send(call, sid, "hello"))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and reply_text(task) == "model says hi"
    assert fake.requests[0]["model"] == "gpt-4o"
    # The session's context tiers travel in the system message; its tools are the read-only ones.
    names = sorted(t["function"]["name"] for t in fake.requests[0]["tools"])
    assert names == ["fs__glob", "fs__read", "fs__search"]
    # The next turn carries the session's conversation and its pinned context.
    await call("_cleveragents/context/set", session_id=sid, key="style", value="terse answers")
    fake.reply(Reply(text="again"))
    await send(call, sid, "more")
    messages = fake.requests[1]["messages"]
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "hello"), ("assistant", "model says hi"), ("user", "more")]
    assert "- style: terse answers" in messages[0]["content"]
    other = (await send(call, "not-a-session", "fs.read path=README.md"))["result"]["task"]
    assert "hello" in reply_text(other) and len(fake.requests) == 2  # the local default answered


async def test_unknown_providers_are_refused_with_the_known_ones(call):
    response = await call("session.create", actor_name="nosuch/model")
    assert response["error"]["code"] == INVALID_PARAMS
    error = response["error"]["data"]["errors"][0]
    assert error["known_providers"] == ["a2a", "local", "ollama", "openai", "python"]


async def test_python_actors_sync_async_generator_and_objects(call):
    assert reply_text((await send(call, await session(call, "python/tests.fakes.agents:shout"), "hey"))
                      ["result"]["task"]) == "HEY!"
    streamed = (await send(call, await session(call, "python/tests.fakes.agents:stream"), "a b?"))["result"]["task"]
    assert streamed["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and reply_text(streamed) == "a b? "
    assert reply_text((await send(call, await session(call, "python/tests.fakes.agents:counter"), "four"))
                      ["result"]["task"]) == "4 characters"
    for target, reason in (("tests.fakes.nosuch:x", "can't import"), ("tests.fakes.agents:missing", "no attribute"),
                           ("tests.fakes.agents:NOT_CALLABLE", "neither callable")):
        failed = (await send(call, await session(call, f"python/{target}"), "x"))["result"]["task"]
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        assert reason in failed["status"]["message"]["parts"][0]["text"]
    assert (await call("session.create", actor_name="python/no-colon"))["error"]["code"] == INVALID_PARAMS


async def test_a_session_budget_stops_the_actor_and_keeps_what_it_produced(call, fake):
    fake.reply(Reply(text="first answer", usage={"prompt_tokens": 8, "completion_tokens": 4}),
               Reply(text="second answer, partly", usage={"prompt_tokens": 8, "completion_tokens": 4}))
    sid = await session(call, "openai/gpt-4o", budget={"max_tokens": 20})
    first = (await send(call, sid, "one"))["result"]["task"]
    assert first["status"]["state"] == "TASK_STATE_COMPLETED"
    second = (await send(call, sid, "two"))["result"]["task"]  # 24 tokens > 20: stopped
    assert second["status"]["state"] == "TASK_STATE_FAILED"
    assert "Budget exceeded" in second["status"]["message"]["parts"][0]["text"]
    assert reply_text(second) == "second answer, partly"  # the partial result is kept
    assert second["metadata"]["error"]["data"]["limit"] == "max_tokens"
    # The budget is spent: the next message is refused up front. SendMessage is a
    # standard method, so the A2A table's code: -32600 with reason RESOURCE_EXHAUSTED.
    refused = (await send(call, sid, "three"))["error"]
    assert refused["code"] == -32600 and refused["message"] == "Budget exceeded: max_tokens is 20"
    [info] = refused["data"]
    assert info["reason"] == "RESOURCE_EXHAUSTED" and info["metadata"]["session_id"] == sid
    assert len(fake.requests) == 2
    bad = await call("session.create", actor_name="openai/gpt-4o", budget={"max_tokens": 0})
    assert bad["error"]["code"] == INVALID_PARAMS


async def test_actor_edit_lands_in_the_overlay_with_decision_nodes(call, fake, workspace):
    fake.reply(Reply(text="README needs a title.", tool_calls=[
        {"name": "fs__write", "arguments": {"path": "README.md", "content": "# Title\nhello\n"}}]),
        Reply(text="Added a title."))
    sid = await session(call, "openai/gpt-4o")
    plan = (await call("_cleveragents/plan/use", action_name="edit", session_id=sid,
                       arguments={"instruction": "Add a title", "glob": "*.md"}))["result"]
    await call("_cleveragents/plan/prompt", plan_id=plan["plan_id"], guidance="Keep it short")
    executed = (await call("_cleveragents/plan/execute", plan_id=plan["plan_id"]))["result"]
    assert executed["state"] == "input-required", executed
    system = fake.requests[0]["messages"][0]["content"]
    assert "Keep it short" in system and "--- README.md\nhello" in system
    assert fake.requests[0]["messages"][-1]["content"] == "Add a title"
    diff = (await call("_cleveragents/plan/diff", plan_id=plan["plan_id"]))["result"]
    assert "+# Title" in diff["diff"] and (workspace / "README.md").read_text() == "hello\n"
    tree = (await call("_cleveragents/plan/tree", plan_id=plan["plan_id"]))["result"]
    step = tree["roots"][0]
    assert step["tool"] == "actor.edit" and step["summary"] == "Added a title."
    [child] = step["children"]
    assert (child["tool"], child["kind"], child["rationale"]) == ("fs.write", "tool_call", "README needs a title.")
    applied = (await call("_cleveragents/plan/apply", plan_id=plan["plan_id"]))["result"]
    assert applied["state"] == "completed" and (workspace / "README.md").read_text() == "# Title\nhello\n"


async def test_a_plan_budget_is_minus_32006_and_keeps_the_edits_so_far(call, fake, workspace):
    write = {"name": "fs__write", "arguments": {"path": "NOTES.md", "content": "partial\n"}}
    fake.reply(Reply(text="Writing notes.", tool_calls=[write], usage={"prompt_tokens": 30, "completion_tokens": 5}),
               Reply(text="more", tool_calls=[write], usage={"prompt_tokens": 30, "completion_tokens": 5}))
    sid = await session(call, "openai/gpt-4o")
    plan = (await call("_cleveragents/plan/use", action_name="edit", session_id=sid,
                       arguments={"instruction": "Write notes", "glob": "*.md"}))["result"]
    failed = await call("_cleveragents/plan/execute", plan_id=plan["plan_id"])
    assert failed["error"]["code"] == BUDGET and failed["error"]["data"]["limit"] == "max_tokens"
    assert failed["error"]["data"]["used"]["input_tokens"] == 60
    diff = (await call("_cleveragents/plan/diff", plan_id=plan["plan_id"]))["result"]
    assert "+partial" in diff["diff"]  # the edit made before the budget ran out stays
    assert not (workspace / "NOTES.md").exists()


async def test_a_published_agent_naming_a_model_actor_gets_it_and_its_tools_run(workspace, fake):
    from cleveragents import Agent

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    agent = Agent(name="calc", role="Calculator", actor="openai/gpt-4o", tools=[add])
    container = Container(Settings(workspace=workspace, memory=True, openai_base_url=fake.base_url), actor=agent)
    facade = A2ALocalFacade(container)
    fake.reply(Reply(text="Adding.", tool_calls=[{"name": "add", "arguments": {"a": 2, "b": 3}}]), Reply(text="5"))
    try:
        response = await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "2+3?"}]}}})
    finally:
        await container.aclose()
    task = response.to_wire()["result"]["task"]
    assert reply_text(task).endswith("5") and task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [t["function"]["name"] for t in fake.requests[0]["tools"]] == ["add"]
    assert "Calculator" in fake.requests[0]["messages"][0]["content"]
    assert fake.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_0", "content": '{"result": 5}'}


async def test_cancelling_a_plan_stops_its_actor_and_closes_the_stream(call, fake):
    import asyncio

    fake.reply(Reply(text="thinking for ever", hang=True, piece=100))
    sid = await session(call, "openai/gpt-4o")
    plan = (await call("_cleveragents/plan/use", action_name="edit", session_id=sid,
                       arguments={"instruction": "Think", "glob": "*.md"}))["result"]
    running = (await call("_cleveragents/plan/execute", plan_id=plan["plan_id"], wait=False))["result"]
    assert running["running"] is True
    for _ in range(200):
        if fake.requests:
            break
        await asyncio.sleep(0.02)
    await call("_cleveragents/plan/cancel", plan_id=plan["plan_id"])
    for _ in range(200):
        status = (await call("_cleveragents/plan/status", plan_id=plan["plan_id"]))["result"]
        if status["state"] != "running":
            break
        await asyncio.sleep(0.02)
    assert status["state"] == "cancelled"
    assert await asyncio.to_thread(fake.closed_early.wait, 5)


async def test_an_actor_declared_in_the_configuration_file(workspace, fake):
    (workspace / ".cleveragents").mkdir(exist_ok=True)
    (workspace / ".cleveragents" / "config.toml").write_text(
        f'[actors."team/reviewer"]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{fake.base_url}"\n'
        'token_budget = 10\n')
    container = Container(Settings(workspace=workspace, memory=True))
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    fake.reply(Reply(text="reviewed", usage={"prompt_tokens": 9, "completion_tokens": 3}))
    try:
        sid = await session(call, "team/reviewer")
        task = (await send(call, sid, "review"))["result"]["task"]
    finally:
        await container.aclose()
    assert fake.requests[0]["model"] == "gpt-4o-mini"
    # 12 tokens pass the declared actor's budget of 10: the reply is kept, the task fails.
    assert task["status"]["state"] == "TASK_STATE_FAILED" and reply_text(task) == "reviewed"
