"""The Python API for publishing agents: tools, Agent, AgentTeam and A2A."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, Optional

import pydantic
import pytest

from cleveragents import A2A, Agent, AgentTeam, InputRequired, Task, TeamTask, tool
from cleveragents.a2a.cards import SkillSpec
from cleveragents.app.tasks import TaskService
from cleveragents.domain.actor import ArtifactChunk, TextChunk, ToolCall, Turn
from cleveragents.domain.errors import BusinessRuleViolation, ValidationError
from cleveragents.domain.task import Artifact, Message, Part, Role, TaskState
from cleveragents.ids import new_id
from cleveragents.infra.store.memory import MemoryStore
from cleveragents.publish.tools import FunctionTool


@tool
def search_web(query: str) -> str:
    """Search the web for information.

    A second paragraph that is not part of the description.
    """
    return f"Results for: {query}"


def word_count(text: str) -> int:
    """Count the words
    in a text."""
    return len(text.split())


def user_message(text: str, **kw: Any) -> Message:
    return Message(new_id(), Role.USER, (Part.of_text(text),), **kw)


def turn_for(text: str) -> Turn:
    return Turn(new_id(), new_id(), user_message(text))


async def collect(actor: Any, text: str) -> list[Any]:
    return [event async for event in actor.respond(turn_for(text))]


def reply_text(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def send(actor: Any, text: str, **kw: Any) -> Any:
    service = TaskService(MemoryStore(), actor)
    return await service.send(user_message(text, **kw))


def agent_reply(task: Any) -> str:
    return task.history[-1].text()


# -- tools ---------------------------------------------------------------------------

def test_schema_from_signature_covers_the_common_types():
    @tool
    def everything(name: str, count: int, ratio: float = 0.5, strict: bool = False,
                   tags: list[str] | None = None, note: Optional[str] = None,  # noqa: UP045 (the old spelling works too)
                   limit: Annotated[int, pydantic.Field(ge=1)] = 10, json: str = "") -> str:
        """Do everything."""
        return name

    schema = everything.input_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["name", "count"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["name"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["strict"] == {"type": "boolean", "default": False}
    assert props["tags"] == {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                             "default": None}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert props["limit"] == {"type": "integer", "minimum": 1, "default": 10}
    assert props["json"] == {"type": "string", "default": ""}  # a pydantic attribute name is fine
    assert "title" not in str(schema)


def test_descriptions_come_from_the_docstring_first_paragraph():
    assert search_web.description == "Search the web for information."
    assert FunctionTool(word_count).description == "Count the words in a text."
    named = tool(name="lookup", description="Look it up.")(word_count)
    assert (named.name, named.description) == ("lookup", "Look it up.")
    assert FunctionTool(lambda: 1, name="one").description == ""


def test_a_decorated_function_stays_callable():
    assert search_web("x") == "Results for: x"
    assert search_web.__name__ == "search_web"
    assert search_web.namespace == "search_web"


def test_validation_converts_defaults_and_names_the_bad_fields():
    @tool
    def add(a: int, b: int = 2, scale: float = 1.0) -> float:
        return (a + b) * scale

    assert add.validate({"a": "3"}) == {"a": 3, "b": 2, "scale": 1.0}
    with pytest.raises(ValidationError) as caught:
        add.validate({"b": "two", "extra": 1})
    assert caught.value.data["tool"] == "add"
    locs = {tuple(error["loc"]): error["type"] for error in caught.value.data["errors"]}
    assert locs == {("a",): "missing", ("b",): "int_parsing", ("extra",): "extra_forbidden"}


def test_unnamed_and_variadic_functions_are_refused():
    with pytest.raises(TypeError, match="name"):
        FunctionTool(lambda x: x)
    with pytest.raises(TypeError, match=r"\*args"):
        FunctionTool(lambda *parts: parts, name="join")


async def test_call_runs_sync_in_a_thread_and_awaits_async():
    @tool
    def where() -> str:
        return threading.current_thread().name

    @tool
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    assert await where.call({}) != threading.current_thread().name
    assert await double.call({"n": "4"}) == 8
    result = await asyncio.to_thread(double.run, {"n": 5})
    assert (result.output, result.summary) == ({"result": 10}, "10")


# -- Agent: handlers -----------------------------------------------------------------

async def test_sync_handlers_run_in_threads_so_two_tasks_run_at_once():
    barrier = threading.Barrier(2, timeout=5)

    def handler(text: str) -> str:
        barrier.wait()  # raises BrokenBarrierError unless both handlers are here at once
        return f"done {text}"

    agent = Agent(name="waiter", handler=handler)
    first, second = await asyncio.gather(collect(agent, "a"), collect(agent, "b"))
    assert (reply_text(first), reply_text(second)) == ("done a", "done b")

    service = TaskService(MemoryStore(), agent)
    tasks = await asyncio.gather(service.send(user_message("c")), service.send(user_message("d")))
    assert [t.state for t in tasks] == [TaskState.COMPLETED] * 2
    assert [agent_reply(t) for t in tasks] == ["done c", "done d"]


async def test_a_handler_that_takes_the_turn_gets_it():
    seen: list[Turn] = []

    async def handler(text: str, turn: Turn) -> str:
        seen.append(turn)
        return text.upper()

    task = await send(Agent(name="echo", handler=handler), "hi")
    assert agent_reply(task) == "HI"
    assert seen[0].task_id == task.id and seen[0].context_id == task.context_id


async def test_async_generator_chunks_stream_and_make_the_reply():
    async def handler(text: str) -> AsyncIterator[Any]:
        yield "Hello, "
        yield {"topic": text}
        yield Artifact("report-1", (Part.of_text("the report"),), name="Report")
        yield "world"

    agent = Agent(name="streamer", handler=handler)
    events = await collect(agent, "agents")
    assert [type(e) for e in events] == [TextChunk, ArtifactChunk, ArtifactChunk, TextChunk]

    task = await send(agent, "agents")
    assert task.state is TaskState.COMPLETED
    assert agent_reply(task) == "Hello, world"
    by_name = {a.name: a for a in task.artifacts}
    assert by_name["data"].parts[0].data == {"topic": "agents"}
    assert by_name["Report"].parts[0].text == "the report"
    assert by_name["response"].parts == (Part.of_text("Hello, world"),)  # streamed in two chunks, kept as one


async def test_a_sync_generator_is_iterated_off_the_event_loop():
    loop_thread = threading.current_thread().name

    def handler(text: str) -> Iterator[str]:
        yield threading.current_thread().name
        yield "|"
        yield text

    thread, _, text = reply_text(await collect(Agent(name="gen", handler=handler), "x")).partition("|")
    assert thread != loop_thread and text == "x"


async def test_input_required_pauses_the_task_and_the_next_message_resumes_it():
    async def handler(text: str, turn: Turn) -> Any:
        if not turn.history:
            return InputRequired("Which topic?")
        return f"Researching {text}"

    service = TaskService(MemoryStore(), Agent(name="asker", handler=handler))
    task = await service.send(user_message("research something"))
    assert task.state is TaskState.INPUT_REQUIRED
    assert task.status.message.text() == "Which topic?"
    resumed = await service.send(user_message("agents", task_id=task.id))
    assert resumed.state is TaskState.COMPLETED and agent_reply(resumed) == "Researching agents"


async def test_a_raising_handler_fails_the_task_with_the_reason():
    def handler(text: str) -> str:
        raise RuntimeError("LLM provider returned 429 Too Many Requests")

    task = await send(Agent(name="flaky", handler=handler), "hi")
    assert task.state is TaskState.FAILED
    assert task.status.message.text() == "RuntimeError: LLM provider returned 429 Too Many Requests"


async def test_a_handler_returning_something_else_fails_clearly():
    task = await send(Agent(name="odd", handler=lambda text: 42), "hi")
    assert task.state is TaskState.FAILED
    assert "not int" in task.status.message.text()


# -- Agent: delegation and the deterministic path --------------------------------------

async def test_an_actor_object_gets_the_turn_with_the_agent_tools_and_persona():
    class Recorder:
        name = "recorder"

        def __init__(self) -> None:
            self.turns: list[Turn] = []

        async def respond(self, turn: Turn) -> AsyncIterator[Any]:
            self.turns.append(turn)
            yield TextChunk("delegated")

    recorder = Recorder()
    agent = Agent(name="front", role="Router", tools=[search_web], actor=recorder)
    assert reply_text(await collect(agent, "hi")) == "delegated"
    assert [t.name for t in recorder.turns[0].tools] == ["search_web"]
    assert recorder.turns[0].context["agent"]["role"] == "Router"


async def test_an_unresolved_model_name_fails_naming_it():
    agent = Agent(name="modelled", actor="openai/gpt-4o")
    assert agent.actor_name == "openai/gpt-4o" and agent.actor is None
    with pytest.raises(BusinessRuleViolation) as caught:
        await collect(agent, "hi")
    assert caught.value.data == {"agent": "modelled", "actor": "openai/gpt-4o"}
    task = await send(agent, "hi")
    assert task.state is TaskState.FAILED and "openai/gpt-4o" in task.status.message.text()


def research_assistant() -> Agent:
    return Agent(name="Research Assistant", role="Research Analyst", goal="Help users research topics",
                 tools=[search_web, word_count])


@pytest.mark.parametrize("message", ['search_web query="agent protocols"', "search_web agent protocols"])
async def test_a_message_naming_a_tool_runs_it(message):
    events = await collect(research_assistant(), message)
    assert events == [ToolCall("search_web", {"query": "agent protocols"}, "Results for: agent protocols"),
                      TextChunk("Results for: agent protocols")]


async def test_a_tool_result_that_is_not_text_is_rendered_as_json_through_the_service():
    task = await send(research_assistant(), "word_count one two three")
    assert task.state is TaskState.COMPLETED and agent_reply(task) == "3"


async def test_bad_tool_arguments_are_answered_not_failed():
    events = await collect(research_assistant(), 'search_web query="unclosed')
    assert "search_web refused" in reply_text(events)
    assert "missing" in reply_text(await collect(research_assistant(), "search_web"))


async def test_anything_else_gets_an_introduction():
    text = reply_text(await collect(research_assistant(), "What can you do?"))
    assert "Research Assistant" in text and "Research Analyst" in text and "Help users research topics" in text
    assert "- search_web: Search the web for information." in text
    assert "- word_count: Count the words in a text." in text
    assert "No language model is configured" in text


def test_start_runs_one_turn_locally():
    assert research_assistant().start("search_web agent protocols") == "Results for: agent protocols"
    assert Agent(name="q", handler=lambda text: InputRequired("Sure?")).start("go") == "Sure?"


async def test_start_inside_a_loop_points_to_astart():
    agent = research_assistant()
    with pytest.raises(RuntimeError, match="astart"):
        agent.start("hi")
    assert await agent.astart("word_count a b") == "2"


def test_skills_one_per_tool_and_tool_names_unique():
    assert research_assistant().skills() == [
        SkillSpec("search_web", "search_web", "Search the web for information.", ("tool",)),
        SkillSpec("word_count", "word_count", "Count the words in a text.", ("tool",)),
    ]
    with pytest.raises(ValueError, match="search_web"):
        Agent(name="twice", tools=[search_web, search_web])
    with pytest.raises(TypeError):
        Agent(name="both", handler=str, actor="openai/gpt-4o")


# -- AgentTeam -----------------------------------------------------------------------

def recording_agent(name: str, inputs: list[tuple[str, str]]) -> Agent:
    def handler(text: str) -> str:
        inputs.append((name, text))
        return f"<{name} output>"

    def lower(text: str) -> str:
        return text.lower()

    return Agent(name=name, role=f"{name} role", handler=handler, tools=[FunctionTool(lower, name=f"{name}_tool")])


async def test_a_team_runs_its_steps_in_order_with_artifacts_per_step():
    inputs: list[tuple[str, str]] = []
    researcher, writer = recording_agent("Researcher", inputs), recording_agent("Writer", inputs)
    team = AgentTeam(agents=[researcher, writer], tasks=[
        Task(description="Research AI trends", agent=researcher, expected_output="bullet points"),
        TeamTask(description="Write a report", agent=writer),
    ])
    task = await send(team, "Focus on agents")
    assert task.state is TaskState.COMPLETED
    assert [name for name, _ in inputs] == ["Researcher", "Writer"]
    first, second = inputs[0][1], inputs[1][1]
    assert "Research AI trends" in first and "bullet points" in first and "Focus on agents" in first
    assert "Write a report" in second and "Focus on agents" in second and "<Researcher output>" in second
    assert agent_reply(task) == "<Writer output>"
    names = [a.name for a in task.artifacts]
    assert names == ["Research AI trends", "response"]
    assert task.artifacts[0].parts[0].text == "<Researcher output>"
    assert [s.id for s in team.skills()] == ["Researcher_tool", "Writer_tool"]


async def test_a_team_without_tasks_chains_its_agents():
    inputs: list[tuple[str, str]] = []
    team = AgentTeam([recording_agent("A", inputs), recording_agent("B", inputs), recording_agent("C", inputs)])
    events = await collect(team, "start")
    assert inputs == [("A", "start"), ("B", "<A output>"), ("C", "<B output>")]
    assert [e.artifact.name for e in events if isinstance(e, ArtifactChunk)] == ["A", "B"]
    assert reply_text(events) == "<C output>"


def test_a_team_step_must_use_a_member():
    outsider = Agent(name="outsider")
    with pytest.raises(ValueError, match="outsider"):
        AgentTeam([Agent(name="member")], tasks=[Task("Do it", outsider)])
    with pytest.raises(ValueError):
        AgentTeam([])


# -- A2A -----------------------------------------------------------------------------

def test_the_card_spec_describes_the_agent_and_its_tools():
    spec = A2A(agent=research_assistant()).card_spec()
    assert (spec.name, spec.description) == ("Research Assistant", "Research Analyst. Help users research topics")
    assert (spec.url, spec.version) == ("http://localhost:8000/a2a", "1.0.0")
    assert [s.id for s in spec.skills] == ["search_web", "word_count"]
    assert all(s.tags == ("tool",) for s in spec.skills)
    assert spec.streaming and spec.push_notifications
    assert not spec.extended_card and not spec.bearer


def test_auth_and_a_callback_turn_on_the_extended_card_and_bearer_scheme():
    secured = A2A(agent=research_assistant(), name="Custom Name", description="Custom description",
                  version="2.0.0", prefix="/api", auth_token="sk-secret-key")
    spec = secured.card_spec()
    assert (spec.name, spec.description, spec.version) == ("Custom Name", "Custom description", "2.0.0")
    assert spec.extended_card and spec.bearer
    card = secured.agent_card()
    assert card["capabilities"]["extendedAgentCard"] is True
    assert "bearerAuth" in card["securitySchemes"]
    assert "sk-secret-key" not in str(card)
    old = secured.agent_card("0.3")
    assert old["supportsAuthenticatedExtendedCard"] is True and old["url"] == "http://localhost:8000/a2a"
    assert [s["id"] for s in old["skills"]] == ["search_web", "word_count"]

    callback_only = A2A(agent=research_assistant(), extended_agent_card_callback=lambda card, ctx: card).card_spec()
    assert callback_only.extended_card and not callback_only.bearer
    with pytest.raises(ValueError, match="0.2"):
        secured.agent_card("0.2")


def test_the_single_agent_wins_over_a_team_and_one_of_them_is_needed():
    agent = research_assistant()
    team = AgentTeam([Agent(name="Researcher"), Agent(name="Writer")])
    assert A2A(agent=agent, agents=team).actor is agent
    served = A2A(agents=team, name="Research Team")
    assert served.actor is team and served.card_spec().name == "Research Team"
    assert "Researcher" in served.description and "Writer" in served.description
    assert A2A(agents=team).name == team.name
    with pytest.raises(TypeError):
        A2A()


def test_asgi_app_is_built_without_starting_the_services(tmp_path):
    served = A2A(agent=research_assistant(), prefix="/api", auth_token="sk-1")
    app = served.asgi_app(workspace=tmp_path, memory=True)
    shared = app.state.a2a
    assert shared.prefix == "/api" and shared.auth.tokens == ("sk-1",)
    assert shared.runtime.container is None  # built on startup or on the first request
    assert shared.public_url is None and A2A(agent=research_assistant(), url="https://x/a2a").url_given


# -- the package ---------------------------------------------------------------------

def test_importing_the_package_does_not_load_pydantic():
    code = "import sys, cleveragents; print('pydantic' in sys.modules, cleveragents.__version__ != '')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
    assert A2A.__name__ == "A2A"


def test_the_server_side_does_not_load_the_client_and_the_client_loads_httpx_late():
    """Importing A2A pulls in no HTTP client; A2AClient loads when named."""
    code = ("import sys; from cleveragents import A2A; a = 'cleveragents.a2a.client' in sys.modules; "
            "from cleveragents import A2AClient; from cleveragents.a2a.client import A2AClient; "
            "print(a, A2AClient is A2AClient, 'httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "False"]
