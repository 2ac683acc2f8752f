"""The context service: tiers, pins, budgets and scopes, over the real container."""

import json
import math

import pytest

from cleveragents.a2a import A2ALocalFacade, A2ARequest
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.actor import TextChunk
from cleveragents.domain.errors import (
    AuthorizationError,
    BudgetExceededError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.task import Message, Part, Role
from cleveragents.ids import new_id


class EchoActor:
    name = "test/echo"

    async def respond(self, turn):
        yield TextChunk("echo: " + turn.message.text())


@pytest.fixture(params=["memory", "sqlite"])
async def container(request, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    built = Container(Settings(workspace=workspace, memory=request.param == "memory"), actor=EchoActor())
    yield built
    await built.aclose()


@pytest.fixture
async def session_id(container):
    return (await container.session_service.create()).session.session_id


async def say(container, context_id, text):
    message = Message(new_id(), Role.USER, (Part.of_text(text),), context_id)
    return await container.task_service.send(message)


def tier(shown, name):
    return next(t for t in shown["tiers"] if t["name"] == name)


def keys(items):
    return [item["key"] for item in items]


async def test_value_pins_are_items_sized_as_json_and_can_be_unpinned(container, session_id):
    ctx = container.context_service
    result = await ctx.set("style", {"indent": 4, "quotes": "double"}, session_id=session_id)
    assert result == {"key": "style", "pinned": True, "scope": {"session_id": session_id, "plan_id": None}}
    await ctx.set("note", "keep it short", session_id=session_id)
    await ctx.set("style", {"indent": 2}, session_id=session_id)  # an update keeps its place

    shown = await ctx.show(session_id=session_id)
    assert shown["scope"] == {"session_id": session_id, "plan_id": None}
    pinned = tier(shown, "pinned")
    style, note = pinned["items"]
    assert style == {"tier": "pinned", "key": "style", "kind": "value", "size_chars": len('{"indent":2}'),
                     "tokens": 3, "content": {"indent": 2}, "pinned_in": "session"}
    assert (note["content"], note["size_chars"], note["tokens"]) == ("keep it short", 13, 4)
    assert pinned["tokens"] == 7 and pinned["size_chars"] == 25
    assert shown["tokens"] == 7

    assert await ctx.set("style", None, session_id=session_id) == {"key": "style", "pinned": False}
    assert await ctx.set("style", None, session_id=session_id) == {"key": "style", "pinned": False}
    assert keys(tier(await ctx.show(session_id=session_id), "pinned")["items"]) == ["note"]


async def test_a_file_pin_shows_the_files_current_text(container, session_id):
    source = container.workspace / "src" / "app.py"
    source.parent.mkdir()
    source.write_text("print('one')\n")
    ctx = container.context_service
    await ctx.set("file:src/app.py", True, session_id=session_id)
    source.write_text("print('two')\n")

    item = tier(await ctx.show(session_id=session_id), "pinned")["items"][0]
    assert (item["kind"], item["content"], item["size_chars"], item["tokens"]) == ("file", "print('two')\n", 13, 4)
    assert await container.store.list_pins(f"session:{session_id}") == [("file:src/app.py", {"file": "src/app.py"})]

    source.unlink()
    item = tier(await ctx.show(session_id=session_id), "pinned")["items"][0]
    assert item["content"] is None and item["tokens"] == 0
    assert item["error"]["type"] == "ResourceNotFoundError"
    assert item["error"]["data"] == {"path": "src/app.py", "reason": "not_found"}


@pytest.mark.parametrize("path", [".env", "../x", "sub/../../x", ".git/config"])
async def test_a_file_pin_outside_the_guards_is_refused_and_not_stored(container, session_id, path):
    (container.workspace / ".env").write_text("SECRET=1\n")
    (container.workspace.parent / "x").write_text("outside\n")
    with pytest.raises(AuthorizationError) as refused:
        await container.context_service.set(f"file:{path}", True, session_id=session_id)
    assert refused.value.data["path"] == path
    assert await container.store.list_pins(f"session:{session_id}") == []


async def test_a_missing_or_oversized_file_is_refused(container, session_id):
    ctx = container.context_service
    with pytest.raises(ResourceNotFoundError) as missing:
        await ctx.set("file:nope.txt", True, session_id=session_id)
    assert missing.value.data == {"path": "nope.txt", "reason": "not_found"}
    (container.workspace / "big.log").write_bytes(b"x" * (1024 * 1024 + 1))
    with pytest.raises(BudgetExceededError) as big:
        await ctx.set("file:big.log", True, session_id=session_id)
    assert big.value.data["limit"] == 1024 * 1024 and big.value.data["size"] == 1024 * 1024 + 1


async def test_a_file_refused_at_assembly_is_an_item_with_an_error(container, session_id):
    # A pin stored before the guards refused it (a policy change) must not break show.
    await container.store.set_pin(f"session:{session_id}", "file:.env", {"file": ".env"})
    await container.context_service.set("rule", "be kind", session_id=session_id)
    env, rule = tier(await container.context_service.show(session_id=session_id), "pinned")["items"]
    assert env["error"]["type"] == "AuthorizationError" and env["error"]["data"]["path"] == ".env"
    assert rule["content"] == "be kind"


async def test_bad_keys_and_values_are_invalid(container, session_id):
    ctx = container.context_service
    for key in ("", "k" * 501):
        with pytest.raises(ValidationError) as bad_key:
            await ctx.set(key, 1, session_id=session_id)
        assert bad_key.value.data["errors"][0]["loc"] == ["key"]
    await ctx.set("k" * 500, 1, session_id=session_id)
    with pytest.raises(ValidationError) as too_big:
        await ctx.set("blob", "x" * (64 * 1024), session_id=session_id)  # + 2 quotes
    error = too_big.value.data["errors"][0]
    assert (error["loc"], error["limit"], error["size"]) == (["value"], 64 * 1024, 64 * 1024 + 2)
    await ctx.set("blob", "x" * (64 * 1024 - 2), session_id=session_id)


async def test_history_is_the_sessions_conversation_oldest_first(container, session_id):
    await say(container, session_id, "hello")
    await say(container, session_id, "again")
    await say(container, new_id(), "elsewhere")

    history = tier(await container.context_service.show(session_id=session_id), "history")
    contents = [(item["role"], item["content"]) for item in history["items"]]
    assert contents == [("user", "hello"), ("agent", "echo: hello"), ("user", "again"), ("agent", "echo: again")]
    assert all(item["kind"] == "message" and item["tier"] == "history" for item in history["items"])
    assert history["tokens"] == sum(math.ceil(len(text) / 4) for _, text in contents)


async def test_a_forks_history_goes_on_from_its_parents_up_to_the_fork(container, session_id):
    await say(container, session_id, "before")
    fork = (await container.session_service.create(metadata={"forked_from": {
        "session_id": session_id, "before": new_id()}})).session.session_id
    await say(container, session_id, "after")  # the parent's own, once the fork was made
    await say(container, fork, "forked")
    items = tier(await container.context_service.show(session_id=fork), "history")["items"]
    assert [item["content"] for item in items] == ["before", "echo: before", "forked", "echo: forked"]
    malformed = (await container.session_service.create(metadata={"forked_from": {
        "session_id": "x", "before": 5}})).session.session_id  # malformed: ignored
    assert tier(await container.context_service.show(session_id=malformed), "history")["items"] == []
    with pytest.raises(ValidationError):  # the origin is the fork's own from its creation on
        await container.session_service.update(fork, {"forked_from": {"session_id": malformed, "before": new_id()}})


@pytest.mark.parametrize("container", ["memory"], indirect=True)  # 101 tasks: once is enough
async def test_history_keeps_the_last_200_messages(container, session_id):
    for n in range(101):  # 202 messages
        await say(container, session_id, f"m{n}")
    items = tier(await container.context_service.show(session_id=session_id), "history")["items"]
    assert len(items) == 200
    assert [items[0]["content"], items[-1]["content"]] == ["m1", "echo: m100"]


async def plan_with_session(container, session_id):
    (container.workspace / "a.txt").write_text("foo\n")
    plan = await container.plan_service.use(
        "replace", {"pattern": "foo", "replacement": "bar", "glob": "*.txt"}, session_id=session_id)
    await container.plan_service.execute(plan.plan_id)
    return plan.plan_id


async def test_a_plan_scope_has_its_decisions_and_its_sessions_tiers(container, session_id):
    await say(container, session_id, "hi")
    plan_id = await plan_with_session(container, session_id)
    ctx = container.context_service
    await ctx.set("shared", "from the session", session_id=session_id)
    await ctx.set("goal", "from the session", session_id=session_id)
    await ctx.set("goal", "from the plan", plan_id=plan_id)
    await ctx.set("file:a.txt", True, plan_id=plan_id)

    shown = await ctx.show(plan_id=plan_id)
    assert shown["scope"] == {"session_id": session_id, "plan_id": plan_id}
    pinned = {item["key"]: item for item in tier(shown, "pinned")["items"]}
    assert list(pinned) == ["goal", "file:a.txt", "shared"]  # the plan's pins first, shadowing
    assert (pinned["goal"]["content"], pinned["goal"]["pinned_in"]) == ("from the plan", "plan")
    assert pinned["file:a.txt"]["content"] == "bar\n"  # as the plan sees it: its overlay
    assert (container.workspace / "a.txt").read_text() == "foo\n"
    decision = tier(shown, "decisions")["items"][0]
    assert decision["kind"] == "decision"
    assert decision["content"]["tool"] == "fs.replace" and decision["content"]["outcome"] == "succeeded"
    assert set(decision["content"]) == {"tool", "arguments", "rationale", "outcome", "summary"}
    assert decision["size_chars"] == len(json.dumps(decision["content"], separators=(",", ":")))
    assert [item["content"] for item in tier(shown, "history")["items"]] == ["hi", "echo: hi"]

    session_only = await ctx.show(session_id=session_id)
    assert keys(tier(session_only, "pinned")["items"]) == ["shared", "goal"]
    assert tier(session_only, "decisions")["items"] == []


async def test_superseded_decisions_are_left_out(container, session_id):
    plan_id = await plan_with_session(container, session_id)
    first = tier(await container.context_service.show(plan_id=plan_id), "decisions")["items"][0]["key"]
    await container.plan_service.correct(plan_id, first, guidance="again")
    decisions = tier(await container.context_service.show(plan_id=plan_id), "decisions")["items"]
    assert len(decisions) == 1 and decisions[0]["key"] != first


async def test_inspect_has_the_sizes_without_the_content(container, session_id):
    await container.context_service.set("note", "abcdefghij", session_id=session_id)
    await say(container, session_id, "hello")
    shown = await container.context_service.show(session_id=session_id)
    inspected = await container.context_service.inspect(session_id=session_id)
    assert inspected["tokens"] == shown["tokens"] > 0
    for seen, full in zip(inspected["tiers"], shown["tiers"], strict=True):
        assert [{k: v for k, v in i.items() if k != "content"} for i in full["items"]] == seen["items"]
    assert all("content" not in item for t in inspected["tiers"] for item in t["items"])


async def test_simulate_keeps_by_priority_and_history_newest_first(container, session_id):
    ctx = container.context_service
    await ctx.set("rule", "x" * 40, session_id=session_id)  # 10 tokens
    await say(container, session_id, "a" * 8)  # 2 tokens; the reply "echo: aaaaaaaa" 4
    await say(container, session_id, "b" * 16)  # 4 tokens; the reply 6
    shown = await ctx.show(session_id=session_id)
    user_a, reply_a, user_b, reply_b = keys(tier(shown, "history")["items"])

    result = await ctx.simulate(20, session_id=session_id)
    assert result["kept"] == [{"tier": "pinned", "key": "rule", "tokens": 10},
                              {"tier": "history", "key": reply_b, "tokens": 6},
                              {"tier": "history", "key": user_b, "tokens": 4}]
    # The next (4 tokens) overflows; the smaller one after it is dropped too.
    assert result["dropped"] == [{"tier": "history", "key": reply_a, "tokens": 4},
                                 {"tier": "history", "key": user_a, "tokens": 2}]
    assert (result["budget"], result["kept_tokens"], result["dropped_tokens"]) == (20, 20, 6)

    everything = await ctx.simulate(shown["tokens"], session_id=session_id)
    assert everything["dropped"] == [] and everything["kept_tokens"] == shown["tokens"] == 26
    nothing = await ctx.simulate(9, session_id=session_id)
    assert nothing["kept"] == [] and nothing["dropped_tokens"] == 26


async def test_simulate_puts_decisions_after_pins(container, session_id):
    plan_id = await plan_with_session(container, session_id)
    await container.context_service.set("rule", "r", plan_id=plan_id)
    result = await container.context_service.simulate(10_000, plan_id=plan_id)
    assert [entry["tier"] for entry in result["kept"]] == ["pinned", "decisions"]
    with pytest.raises(ValidationError):
        await container.context_service.simulate(-1, plan_id=plan_id)


@pytest.mark.parametrize("call", ["show", "inspect", "simulate", "set"])
async def test_scope_is_exactly_one_known_session_or_plan(container, session_id, call):
    method = getattr(container.context_service, call)
    extra = {"simulate": {"budget": 10}, "set": {"key": "k", "value": 1}}.get(call, {})
    for scope in ({}, {"session_id": session_id, "plan_id": "p"}):
        with pytest.raises(ValidationError) as invalid:
            await method(**extra, **scope)
        assert [e["loc"] for e in invalid.value.data["errors"]] == [["session_id"], ["plan_id"]]
    with pytest.raises(ResourceNotFoundError) as no_session:
        await method(**extra, session_id="no-such-session")
    assert no_session.value.data == {"session_id": "no-such-session"}
    with pytest.raises(ResourceNotFoundError) as no_plan:
        await method(**extra, plan_id="no-such-plan")
    assert no_plan.value.data == {"plan_id": "no-such-plan"}


async def test_the_context_methods_reach_the_service_through_the_facade(container, session_id):
    facade = A2ALocalFacade(container)
    pinned = await facade.dispatch(A2ARequest(
        method="_cleveragents/context/set", params={"session_id": session_id, "key": "k", "value": [1, 2]}))
    assert pinned.result["pinned"] is True
    shown = await facade.dispatch(A2ARequest(method="_cleveragents/context/show", params={"session_id": session_id}))
    assert tier(shown.result, "pinned")["items"][0]["content"] == [1, 2]
    refused = await facade.dispatch(A2ARequest(
        method="_cleveragents/context/set", params={"session_id": session_id, "key": "file:.env", "value": True}))
    assert refused.error.code == -32003
