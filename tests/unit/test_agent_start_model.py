"""``Agent(actor="provider/model").start(text)`` in a plain script: the actor is resolved
from the environment and the configuration files, as a server resolves it, and the
model (a real HTTP server speaking the chat-completions API, in place of the hosted
one) answers with the agent's persona and may call its tools."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from cleveragents import Agent, tool
from cleveragents.domain.errors import ValidationError
from cleveragents.infra.config_file import USER_CONFIG_ENV
from tests.fakes.openai_server import FakeOpenAI, Reply


@pytest.fixture
def model(tmp_path, monkeypatch):
    """The chat-completions double, named by the environment; the script runs in an
    empty directory with no user configuration file."""
    for name in ("CLEVERAGENTS_OPENAI_BASE_URL", "CLEVERAGENTS_OPENAI_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAI() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
        monkeypatch.chdir(tmp_path)
        yield fake


def test_start_asks_the_named_model_with_the_agents_persona(model):
    model.reply(Reply(text="Agent protocols: A2A and ACP."))
    agent = Agent(name="researcher", instructions="Answer research questions via A2A.", actor="openai/gpt-4o")
    assert agent.start("Summarise the latest on agent protocols.") == "Agent protocols: A2A and ACP."
    (request,) = model.requests
    assert request["model"] == "gpt-4o"
    assert model.headers[0]["authorization"] == "Bearer sk-test"
    prompt = " ".join(str(m["content"]) for m in request["messages"])
    assert "researcher" in prompt and "Answer research questions via A2A." in prompt
    assert request["messages"][-1] == {"role": "user", "content": "Summarise the latest on agent protocols."}


def test_the_model_calls_the_agents_own_tools(model):
    calls: list[str] = []

    @tool
    def search_web(query: str) -> str:
        """Search the web for information."""
        calls.append(query)
        return f"Results for: {query}"

    model.reply(Reply(tool_calls=[{"name": "search_web", "arguments": {"query": "A2A"}}]),
                Reply(text="A2A is a protocol."))
    agent = Agent(name="Research Assistant", role="Research Analyst", tools=[search_web], actor="openai/gpt-4o")
    assert agent.start("What is A2A?") == "A2A is a protocol."
    assert calls == ["A2A"]
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["search_web"]
    assert "Results for: A2A" in str(model.requests[1]["messages"])
    # Resolved once: the next start asks the same model again.
    model.reply(Reply(text="again"))
    assert agent.start("and?") == "again"


def test_an_actor_the_workspace_declares_is_found(model, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    config = tmp_path / ".cleveragents" / "config.toml"
    config.parent.mkdir()
    config.write_text(textwrap.dedent(f"""
        [actors."team/writer"]
        provider = "openai"
        model = "small-writer"
        base_url = "{model.base_url}"
        api_key_env = "WRITER_KEY"
    """))
    monkeypatch.setenv("WRITER_KEY", "sk-writer")
    model.reply(Reply(text="A short text."))
    assert Agent(name="Writer", actor="team/writer").start("Write") == "A short text."
    assert model.requests[0]["model"] == "small-writer" and model.headers[0]["authorization"] == "Bearer sk-writer"


async def test_astart_resolves_inside_an_event_loop(model):
    model.reply(Reply(text="from the loop"))
    assert await Agent(name="Looped", actor="openai/gpt-4o").astart("hi") == "from the loop"


def test_an_unknown_provider_is_a_clear_error(model):
    with pytest.raises(ValidationError) as caught:
        Agent(name="Lost", actor="nowhere/model").start("hi")
    (error,) = caught.value.data["errors"]
    assert "openai" in error["known_providers"] and "unknown actor provider 'nowhere'" in caught.value.message


def test_a_plain_script_runs_as_written(model, tmp_path):
    script = tmp_path / "researcher.py"
    script.write_text(textwrap.dedent("""
        from cleveragents import Agent

        agent = Agent(name="researcher", instructions="Answer research questions via A2A.", actor="openai/gpt-4o")
        print(agent.start("Summarise the latest on agent protocols."))
    """))
    model.reply(Reply(text="Agents speak A2A."))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Agents speak A2A.\n"


def default_actor(directory, name: str) -> None:
    config = directory / ".cleveragents" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(f'[defaults]\ndefault_actor = "{name}"\n')


def test_an_agent_naming_no_actor_uses_the_configured_default_model(model, tmp_path):
    default_actor(tmp_path, "openai/gpt-4o-mini")
    script = tmp_path / "researcher.py"
    script.write_text(textwrap.dedent("""
        from cleveragents import Agent

        agent = Agent(name="researcher", instructions="Answer research questions via A2A.")
        print(agent.start("Summarise the latest on agent protocols."))
    """))
    model.reply(Reply(text="Agents speak A2A."))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Agents speak A2A.\n"
    assert model.requests[0]["model"] == "gpt-4o-mini"


def test_with_the_local_default_the_agent_answers_from_its_tools(model, tmp_path):
    default_actor(tmp_path, "local/default")

    @tool
    def shout(text: str) -> str:
        """Shout a text."""
        return text.upper()

    assert Agent(name="Shouter", tools=[shout]).start("shout text=hey") == "HEY"
    assert Agent(name="Plain").start("hi").startswith("I am Plain.")
    assert model.requests == []


async def test_a_served_agent_naming_no_actor_uses_the_configured_default_model(model, workspace):
    from cleveragents import A2A
    from cleveragents.a2a.facade import A2ALocalFacade
    from cleveragents.config import Settings
    from cleveragents.container import Container

    model.reply(Reply(text="served by the model"))
    agent = Agent(name="researcher", instructions="Answer research questions.")
    container = Container(Settings(workspace=workspace, memory=True, default_actor="openai/gpt-4o-mini",
                                   openai_base_url=model.base_url),
                          actor=agent, card=A2A(agent=agent))
    try:
        sent = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}
        response = await A2ALocalFacade(container).dispatch(
            {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": sent}})
        task = response.to_wire()["result"]["task"]
    finally:
        await container.aclose()
    assert "".join(part["text"] for part in task["artifacts"][0]["parts"]) == "served by the model"
    assert model.requests[0]["model"] == "gpt-4o-mini"
    assert "Answer research questions." in str(model.requests[0]["messages"])
