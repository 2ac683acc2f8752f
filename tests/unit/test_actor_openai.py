"""The OpenAI-compatible actor against a real local HTTP server speaking the
chat-completions wire format (tests/fakes/openai_server.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cleveragents.config import Settings
from cleveragents.domain.actor import ActorError, TextChunk, ToolCall, ToolInfo, Turn, Usage
from cleveragents.domain.errors import AuthorizationError, ValidationError
from cleveragents.domain.task import Message, Part, Role
from cleveragents.infra.actors.openai import MAX_ANSWER_BYTES, ChatSettings, OpenAIActor
from cleveragents.infra.actors.resolve import known_providers, resolve_actor
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.socket_buffers import in_flight_bytes

READ = ToolInfo("fs.read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}},
                                           "required": ["path"]})


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


def turn(text: str = "hello", invoke: Any = None, tools: tuple[ToolInfo, ...] = (), **context: Any) -> Turn:
    message = Message("m1", Role.USER, (Part.of_text(text),), "ctx", "task")
    history = (Message("m0", Role.AGENT, (Part.of_text("earlier reply"),)),)
    return Turn("task", "ctx", message, history, tools, context, invoke)


def actor(fake: FakeOpenAI, **settings: Any) -> OpenAIActor:
    return OpenAIActor("openai/gpt-test", "gpt-test", ChatSettings(base_url=fake.base_url, **settings))


async def events_of(actor: OpenAIActor, t: Turn) -> list[Any]:
    return [event async for event in actor.respond(t)]


async def test_streams_text_in_chunks_and_reports_usage(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake.reply(Reply(text="Hello from the model", usage={"prompt_tokens": 12, "completion_tokens": 7}))
    events = await events_of(actor(fake), turn("hi", instructions="Be brief."))
    texts = [e.text for e in events if isinstance(e, TextChunk)]
    assert len(texts) > 1 and "".join(texts) == "Hello from the model"
    assert events[-1] == Usage(12, 7, 0.0)
    body = fake.requests[0]
    assert body["model"] == "gpt-test" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert [m["role"] for m in body["messages"]] == ["system", "assistant", "user"]
    assert body["messages"][0]["content"].startswith("Be brief.")
    assert body["messages"][-1]["content"] == "hi"
    assert "tools" not in body  # no invoker: no tools offered
    assert fake.headers[0]["authorization"] == "Bearer sk-test"


async def test_non_stream_mode_and_cost_from_prices(fake):
    fake.reply(Reply(text="whole answer", usage={"prompt_tokens": 1_000_000, "completion_tokens": 500_000}))
    events = await events_of(actor(fake, stream=False, input_cost_per_mtok=2.0, output_cost_per_mtok=4.0), turn())
    assert events == [TextChunk("whole answer"), Usage(1_000_000, 500_000, 4.0)]
    assert fake.requests[0]["stream"] is False and "stream_options" not in fake.requests[0]


async def test_tool_calls_split_across_chunks_run_and_feed_back(fake):
    calls: list[tuple[str, dict[str, Any]]] = []

    async def invoke(name: str, arguments: Any) -> dict[str, Any]:
        calls.append((name, dict(arguments)))
        return {"text": "file body"}

    fake.reply(Reply(text="I need the README.", tool_calls=[{"name": "fs__read", "arguments": {"path": "README.md"}}]),
               Reply(text="It says: file body"))
    events = await events_of(actor(fake), turn("what is in README?", invoke, (READ,)))
    assert calls == [("fs.read", {"path": "README.md"})]
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call == ToolCall("fs.read", {"path": "README.md"}, {"text": "file body"}, "I need the README.")
    assert "".join(e.text for e in events if isinstance(e, TextChunk)).endswith("It says: file body")
    assert sum(isinstance(e, Usage) for e in events) == 2
    first, second = fake.requests
    assert first["tools"][0]["function"]["name"] == "fs__read"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["path"]
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"][0]["function"] == {"name": "fs__read", "arguments": '{"path": "README.md"}'}
    assert tool == {"role": "tool", "tool_call_id": "call_0", "content": '{"text": "file body"}'}


async def test_refused_and_malformed_tool_calls_are_reported_to_the_model(fake):
    async def invoke(name: str, arguments: Any) -> dict[str, Any]:
        raise AuthorizationError("fs.write changes files", {"tool": name})

    fake.reply(Reply(tool_calls=[{"name": "fs__read", "arguments": "{not json"},
                                 {"name": "fs__read", "arguments": {"path": "x"}},
                                 {"name": "nope", "arguments": {}}]),
               Reply(text="done"))
    events = await events_of(actor(fake), turn("go", invoke, (READ,)))
    failed = [e for e in events if isinstance(e, ToolCall)]
    assert [e.failed for e in failed] == [True, True, True]
    assert "not valid JSON" in failed[0].result["error"]
    assert failed[1].result["error"] == "fs.write changes files"
    assert "no tool named" in failed[2].result["error"]
    assert len([m for m in fake.requests[1]["messages"] if m["role"] == "tool"]) == 3


async def test_tool_call_loop_has_a_limit(fake):
    async def invoke(name: str, arguments: Any) -> dict[str, Any]:
        return {}

    loop = Reply(tool_calls=[{"name": "fs__read", "arguments": {"path": "a"}}])
    fake.reply(loop, loop, loop)
    with pytest.raises(ActorError) as info:
        await events_of(actor(fake, max_tool_rounds=2), turn("go", invoke, (READ,)))
    assert info.value.data["reason"] == "tool_call_limit" and len(fake.requests) == 3


@pytest.mark.parametrize(("status", "reason"), [(401, "unauthorized"), (429, "rate_limited"),
                                                (503, "server_error"), (400, "rejected")])
async def test_http_errors_are_clear(fake, status, reason):
    fake.reply(Reply(status=status))
    with pytest.raises(ActorError) as info:
        await events_of(actor(fake), turn())
    assert info.value.data["reason"] == reason and info.value.data["status"] == status
    assert info.value.data["provider_message"] == f"scripted error {status}"
    if status == 401:
        assert "OPENAI_API_KEY" in info.value.message


async def test_bad_json_and_unreachable_endpoint(fake):
    fake.reply(Reply(raw=b"<html>oops"))
    with pytest.raises(ActorError) as info:
        await events_of(actor(fake), turn())
    assert info.value.data["reason"] == "bad_response" and "oops" in info.value.data["preview"]
    gone = OpenAIActor("openai/x", "x", ChatSettings(base_url="http://127.0.0.1:9/v1", timeout=2))
    with pytest.raises(ActorError) as info:
        await events_of(gone, turn())
    assert info.value.data["reason"] == "unreachable"


@pytest.mark.parametrize("endless", ["line", "body", "error"])
async def test_an_answer_that_never_ends_is_cut_off(fake, endless):
    """A model endpoint's answer is read up to a limit: an SSE line, a whole body or an
    error body that never ends fails the turn, and memory stays bounded."""
    fake.reply(Reply(endless=endless))
    with pytest.raises(ActorError) as info:
        await events_of(actor(fake), turn())
    reason = "server_error" if endless == "error" else "bad_response"
    assert info.value.data["reason"] == reason, info.value.data
    if endless != "error":
        assert "exceeds" in info.value.message, info.value.message
    assert fake.sent < MAX_ANSWER_BYTES + in_flight_bytes() + 1024 * 1024, f"{fake.sent} bytes were sent"


async def test_cancelling_closes_the_stream(fake):
    fake.reply(Reply(text="first chunk then silence", hang=True, piece=100))
    received: list[Any] = []

    async def consume() -> None:
        async for event in actor(fake).respond(turn()):
            received.append(event)

    task = asyncio.ensure_future(consume())
    for _ in range(200):
        if received:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert received == [TextChunk("first chunk then silence")]
    assert await asyncio.to_thread(fake.closed_early.wait, 5)


def test_resolver_names_the_known_providers_and_aliases_ollama(monkeypatch):
    assert set(known_providers()) == {"a2a", "local", "ollama", "openai", "python"}
    with pytest.raises(ValidationError) as info:
        resolve_actor("nosuch/model", Settings())
    assert info.value.data["errors"][0]["known_providers"] == list(known_providers())
    assert "openai" in info.value.message
    ollama = resolve_actor("ollama/llama3", Settings())
    assert ollama.settings.base_url == "http://127.0.0.1:11434/v1" and ollama.model == "llama3"
    openai = resolve_actor("openai/gpt-4o", Settings(openai_base_url="http://127.0.0.1:1/v1"))
    assert openai.settings.base_url == "http://127.0.0.1:1/v1"
    declared = {"team/reviewer": {"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://h/v1",
                                  "token_budget": 100}}
    reviewer = resolve_actor("team/reviewer", Settings(), declared=declared)
    assert (reviewer.model, reviewer.settings.base_url, reviewer.budget.max_tokens) == ("gpt-4o-mini", "http://h/v1", 100)
    with pytest.raises(ValidationError):
        resolve_actor("a2a/not-a-url", Settings(), remote=lambda url, token_env: None)


async def test_a_containers_turns_share_their_connection_to_the_model(fake, workspace, monkeypatch):
    """A hosted model is a TLS handshake away: a connection made for one turn serves
    the next, within the container's keep-alive."""
    from tests.in_process import in_process

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake.reply(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    (workspace / ".cleveragents").mkdir(exist_ok=True)
    (workspace / ".cleveragents" / "config.toml").write_text(
        f'[actors."openai/gpt-test"]\nbase_url = "{fake.base_url}"\nstream = false\n')
    async with in_process(workspace, default_actor="openai/gpt-test") as call:
        for n in range(3):
            message = {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": f"m{n}"}
            answer = await call("SendMessage", {"message": message})
            assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
    assert len(fake.requests) == 3 and len(fake.connections) == 1, fake.connections
    assert {h["authorization"] for h in fake.headers} == {"Bearer sk-test"}
