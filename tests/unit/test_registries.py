"""The registry list methods, through the facade over a real container."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cleveragents import A2A, Agent, tool
from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.infra.config_file import USER_CONFIG_ENV, workspace_config_path

CONFIG = """\
[defaults]
default_actor = "ollama/llama3"
automation_profile = "manual"

[actors."openai/gpt-4o"]
base_url = "http://127.0.0.1:9/v1"
api_key_env = "MY_OPENAI_KEY"

[actors."team/reviewer"]
provider = "openai"
model = "gpt-4o-mini"
description = "Reviews diffs"

[projects.api]
path = "../api"
description = "The API service"

[projects.here]
path = "."

[resources.docs]
type_name = "repository"
uri = "https://example.invalid/docs.git"
description = "Team docs"

[resources.tracker]
type_name = "issues"
uri = "https://example.invalid/issues"
"""


@pytest.fixture(autouse=True)
def no_user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))


def configured(workspace: Path, text: str = CONFIG) -> Path:
    path = workspace_config_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


class Backend:
    def __init__(self, workspace: Path, **options):
        self.container = Container(Settings(workspace=workspace, memory=True), **options)
        self.facade = A2ALocalFacade(self.container)

    async def call(self, method: str, params: dict | None = None) -> dict:
        response = await self.facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})
        return response.to_wire()

    async def result(self, method: str, params: dict | None = None) -> dict:
        wire = await self.call(method, params)
        assert "result" in wire, wire
        return wire["result"]

    async def every(self, kind: str, key: str, **params) -> list[dict]:
        """All pages of a list, two rows at a time."""
        rows, cursor = [], None
        while True:
            page = await self.result(f"_cleveragents/registry/{kind}/list", {**params, "limit": 2, "cursor": cursor})
            assert len(page[key]) <= 2
            rows += page[key]
            if (cursor := page["next_cursor"]) is None:
                return rows

    async def aclose(self) -> None:
        await self.container.aclose()
        self.facade.close()


@pytest.fixture
async def backend(workspace):
    configured(workspace)
    backend = Backend(workspace)
    yield backend
    await backend.aclose()


async def test_actors_are_the_declared_the_default_and_the_providers(backend, workspace):
    page = await backend.result("_cleveragents/registry/actor/list")
    assert page["next_cursor"] is None
    actors = page["actors"]
    assert [(a["name"], a["kind"], a["default"]) for a in actors] == [
        ("openai/gpt-4o", "declared", False), ("team/reviewer", "declared", False),
        ("ollama/llama3", "default", True),
        ("a2a/<url>", "provider", False), ("local/<name>", "provider", False), ("ollama/<model>", "provider", False),
        ("openai/<model>", "provider", False), ("python/<module>:<callable>", "provider", False),
    ]
    assert all(set(a) == {"name", "kind", "provider", "model", "description", "default", "source", "settings"}
               for a in actors)
    gpt, reviewer = actors[:2]
    assert gpt["settings"] == {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "MY_OPENAI_KEY"}
    assert gpt["source"] == str(workspace_config_path(workspace))
    assert (reviewer["provider"], reviewer["model"], reviewer["description"]) == ("openai", "gpt-4o-mini", "Reviews diffs")
    assert await backend.every("actor", "actors") == actors


async def test_a_declared_default_actor_is_marked_not_repeated(workspace):
    configured(workspace, CONFIG.replace('default_actor = "ollama/llama3"', 'default_actor = "team/reviewer"'))
    backend = Backend(workspace)
    try:
        actors = (await backend.result("_cleveragents/registry/actor/list"))["actors"]
        assert [a["name"] for a in actors if a["default"]] == ["team/reviewer"]
        assert not [a for a in actors if a["kind"] == "default"]
    finally:
        await backend.aclose()


async def test_the_files_defaults_reach_the_services(backend):
    session = await backend.result("session.create", {})
    assert session["actor_name"] == "ollama/llama3"
    plan = await backend.result("_cleveragents/plan/use", {
        "action_name": "replace", "arguments": {"pattern": "hello", "replacement": "bye"}})
    assert plan["automation_profile"] == "manual"


async def test_projects_are_the_workspace_and_the_configured_ones(backend, workspace):
    projects = (await backend.result("_cleveragents/registry/project/list"))["projects"]
    # `here` points at the workspace, so it is the current project (not listed twice).
    assert [(p["name"], p["current"]) for p in projects] == [("api", False), ("here", True)]
    assert projects[0] == {"name": "api", "path": str((workspace.parent / "api").resolve()),
                           "description": "The API service", "current": False,
                           "source": str(workspace_config_path(workspace))}
    assert projects[1]["path"] == str(workspace.resolve())


async def test_without_configuration_the_workspace_is_the_project_and_a_resource(workspace):
    backend = Backend(workspace)
    try:
        projects = (await backend.result("_cleveragents/registry/project/list"))["projects"]
        assert projects == [{"name": workspace.name, "path": str(workspace.resolve()),
                             "description": "The current workspace", "current": True, "source": "workspace"}]
        resources = (await backend.result("_cleveragents/registry/resource/list"))["resources"]
        assert resources == [{"name": "workspace", "type_name": "workspace", "uri": workspace.resolve().as_uri(),
                              "description": "The current workspace", "source": "workspace"}]
        actors = (await backend.result("_cleveragents/registry/actor/list"))["actors"]
        assert actors[0]["name"] == "local/default" and actors[0]["default"] is True
    finally:
        await backend.aclose()


async def test_resources_are_filtered_by_type_and_paged(backend, workspace):
    everything = await backend.every("resource", "resources")
    assert [(r["name"], r["type_name"]) for r in everything] == [
        ("docs", "repository"), ("tracker", "issues"), ("workspace", "workspace")]
    assert everything[0] == {"name": "docs", "type_name": "repository", "uri": "https://example.invalid/docs.git",
                             "description": "Team docs", "source": str(workspace_config_path(workspace))}
    only = await backend.result("_cleveragents/registry/resource/list", {"type_name": "issues"})
    assert [r["name"] for r in only["resources"]] == ["tracker"] and only["next_cursor"] is None
    none = await backend.result("_cleveragents/registry/resource/list", {"type_name": "database"})
    assert none == {"resources": [], "next_cursor": None}


async def test_skills_are_the_backends_tools_and_actions(backend):
    skills = await backend.every("skill", "skills")
    kinds = {s["kind"] for s in skills}
    assert kinds == {"tool", "action"}
    tools = {s["id"] for s in skills if s["kind"] == "tool"}
    assert {"fs.read", "fs.replace", "patch.apply", "shell.run"} <= tools
    assert {"replace", "apply-patch", "run"} <= {s["id"] for s in skills if s["kind"] == "action"}
    assert all(set(s) == {"id", "name", "description", "kind", "tags", "examples"} for s in skills)


async def test_a_published_agents_card_skills_come_first(workspace):
    @tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    published = A2A(Agent(name="helper", handler=lambda text: text, tools=[lookup]))
    backend = Backend(workspace, actor=published.actor, card=published)
    try:
        skills = (await backend.result("_cleveragents/registry/skill/list", {"limit": 500}))["skills"]
        assert skills[0] == {"id": "lookup", "name": "lookup", "description": "Look a term up.", "kind": "agent",
                             "tags": ["tool"], "examples": []}
        assert [s["kind"] for s in skills[1:]] == sorted((s["kind"] for s in skills[1:]), key=["tool", "action"].index)
    finally:
        await backend.aclose()


async def test_bad_paging_params_are_invalid_params(backend):
    for params in ({"cursor": "not-a-cursor"}, {"limit": 0}, {"limit": 501}, {"type": "x"}):
        wire = await backend.call("_cleveragents/registry/actor/list", params)
        assert wire["error"]["code"] == -32602, params
    wire = await backend.call("_cleveragents/registry/resource/list", {"type_name": "x" * 101})
    assert wire["error"]["code"] == -32602
    past_the_end = await backend.result("_cleveragents/registry/project/list", {"cursor": "999"})
    assert past_the_end == {"projects": [], "next_cursor": None}


async def test_a_bad_workspace_file_stops_the_container(workspace):
    from cleveragents.infra.config_file import ConfigError

    configured(workspace, '[actors."openai/gpt-4o"]\nbase_url = "ftp://x"\n')
    with pytest.raises(ConfigError, match=r'config.toml:2: actors."openai/gpt-4o".base_url: '):
        Container(Settings(workspace=workspace, memory=True))
