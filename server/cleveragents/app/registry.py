"""The registries: tools, actions (with the checks run when a plan is created),
actors, skills, projects and resources.

The composition root hands in the tools, an action loader (infra reads the
workspace's action files) and the configuration's entries; nothing here reads files
itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from cleveragents.app.paging import page, parse_cursor
from cleveragents.domain.actions import Action, ActionStep
from cleveragents.domain.errors import (
    DuplicateEntityError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.tools import Tool

ActionLoader = Callable[[], tuple[list[Action], list[dict[str, Any]]]]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise DuplicateEntityError(f"a tool named {tool.name} is already registered", {"tool": tool.name})
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ResourceNotFoundError(f"no tool named {name}", {"tool": name, "available": self.names()}) from None

    def list_tools(self, namespace: str | None = None) -> dict[str, Any]:
        return {"tools": [
            {"name": tool.name, "namespace": tool.namespace, "description": tool.description,
             "input_schema": tool.input_schema()}
            for name, tool in sorted(self._tools.items())
            if namespace is None or tool.namespace == namespace
        ]}


class ResolvedAction(NamedTuple):
    """An action ready to become a plan: its bound arguments and its steps, whose
    arguments are rendered and checked (defaults filled in) by their tools."""

    action: Action
    bound: dict[str, Any]
    steps: list[ActionStep]


class ActionRegistry:
    """Actions from ``loader``. With a ``fingerprint`` (cheap: the action files'
    stats) the loader runs again only when the fingerprint changes; without one it
    runs on every call."""

    def __init__(self, loader: ActionLoader, tools: ToolRegistry,
                 fingerprint: Callable[[], Hashable] | None = None) -> None:
        self._loader = loader
        self._tools = tools
        self._fingerprint = fingerprint
        self._lock = threading.Lock()
        self._stamp: Hashable = None
        self._loaded: tuple[dict[str, Action], list[dict[str, Any]]] | None = None

    def _current(self) -> tuple[dict[str, Action], list[dict[str, Any]]]:
        with self._lock:
            # Stamp before loading: a file changed mid-load is then seen as changed next time.
            stamp = self._fingerprint() if self._fingerprint is not None else None
            if self._loaded is None or self._fingerprint is None or stamp != self._stamp:
                actions, problems = self._loader()
                self._loaded = ({action.name: action for action in actions}, problems)
                self._stamp = stamp
            return self._loaded

    def get(self, name: str) -> Action:
        actions, _ = self._current()
        try:
            return actions[name]
        except KeyError:
            raise ResourceNotFoundError(f"no action named {name}",
                                        {"action": name, "available": sorted(actions)}) from None

    def list_actions(self) -> dict[str, Any]:
        actions, problems = self._current()
        return {"actions": [actions[name].to_dict() for name in sorted(actions)], "problems": list(problems)}

    def resolve(self, name: str, arguments: Mapping[str, Any]) -> ResolvedAction:
        action = self.get(name)
        bound = action.bind(arguments)
        steps = []
        for step in action.render(bound):
            try:
                tool = self._tools.get(step.tool)
            except ResourceNotFoundError as exc:
                raise ResourceNotFoundError(
                    f"step {step.id} of action {name} uses the unknown tool {step.tool}",
                    {"action": name, "step": step.id, **exc.data},
                ) from None
            try:
                checked = tool.validate(step.arguments)
            except ValidationError as exc:
                raise ValidationError(f"step {step.id} of action {name}: {exc.message}",
                                      {"action": name, "step": step.id, **exc.data}) from None
            steps.append(ActionStep(step.id, step.tool, checked, step.rationale))
        return ResolvedAction(action, bound, steps)


# --- the catalogs: actors, skills, projects, resources -------------------------------
# How an actor of each provider is named, for providers that don't say themselves.
PROVIDER_SYNTAX = {
    "local": "local/<name>", "openai": "openai/<model>", "ollama": "ollama/<model>",
    "a2a": "a2a/<url>", "python": "python/<module>:<callable>",
}


def _info(info: Any, key: str) -> Any:
    return info.get(key) if isinstance(info, Mapping) else getattr(info, key, None)


def provider_rows(known: Any) -> list[dict[str, Any]]:
    """Rows for the actor providers, from a resolver's ``known_providers()``: names,
    or a mapping of name to its syntax (a string) or to details (``syntax``, ``description``)."""
    items = known.items() if isinstance(known, Mapping) else ((_info(p, "name") or p, p) for p in known)
    rows: list[dict[str, Any]] = []
    for name, info in items:
        name = str(name)
        syntax = info if isinstance(info, str) and "/" in info else _info(info, "syntax")
        description = _info(info, "description") or (info if isinstance(info, str) and info != syntax and info != name
                                                       else "")
        rows.append({"name": syntax or PROVIDER_SYNTAX.get(name, f"{name}/<model>"), "kind": "provider",
                     "provider": name, "model": None, "description": description, "default": False,
                     "source": "builtin", "settings": {}})
    return sorted(rows, key=lambda row: row["provider"])


def actor_rows(providers: Any, declared: Mapping[str, Mapping[str, Any]], default_actor: str) -> list[dict[str, Any]]:
    """The actors declared in the configuration, then the default (unless declared), then the providers."""
    rows = []
    for name in sorted(declared):
        entry = dict(declared[name])
        rows.append({"name": name, "kind": "declared", "provider": entry.pop("provider", name.partition("/")[0]),
                     "model": entry.pop("model", name.partition("/")[2]), "description": entry.pop("description", ""),
                     "default": name == default_actor, "source": entry.pop("source", "config"), "settings": entry})
    if default_actor not in declared:
        provider, _, model = default_actor.partition("/")
        rows.append({"name": default_actor, "kind": "default", "provider": provider, "model": model,
                     "description": "The actor of a session created without one", "default": True,
                     "source": "settings", "settings": {}})
    return rows + provider_rows(providers)


def project_rows(projects: Mapping[str, Mapping[str, Any]], workspace: Path) -> list[dict[str, Any]]:
    """The configured projects, and the workspace (``current``) unless one of them is it."""
    rows = []
    for name in sorted(projects):
        entry = projects[name]
        rows.append({"name": name, "path": entry["path"], "description": entry.get("description", ""),
                     "current": Path(entry["path"]) == workspace, "source": entry.get("source", "config")})
    if not any(row["current"] for row in rows):
        name = workspace.name if workspace.name not in projects else "workspace"
        rows.insert(0, {"name": name or "workspace", "path": str(workspace), "description": "The current workspace",
                        "current": True, "source": "workspace"})
    return rows


def resource_rows(resources: Mapping[str, Mapping[str, Any]], workspace: Path) -> list[dict[str, Any]]:
    """The configured resources, and the workspace as a ``workspace`` resource (a
    resource named ``workspace`` in the configuration replaces it)."""
    rows = {"workspace": {"name": "workspace", "type_name": "workspace", "uri": workspace.as_uri(),
                          "description": "The current workspace", "source": "workspace"}}
    for name, entry in resources.items():
        rows[name] = {"name": name, "type_name": entry["type_name"], "uri": entry["uri"],
                      "description": entry.get("description", ""), "source": entry.get("source", "config")}
    return [rows[name] for name in sorted(rows)]


def skill_rows(agent_skills: Iterable[Mapping[str, Any]], tools: ToolRegistry,
               actions: ActionRegistry) -> list[dict[str, Any]]:
    """The published agent's card skills (``agent``), then the backend's tools (``tool``)
    and actions (``action``). Ids are unique within a kind."""
    rows = [{"id": s["id"], "name": s.get("name", s["id"]), "description": s.get("description", ""),
             "kind": "agent", "tags": list(s.get("tags", ())), "examples": list(s.get("examples", ()))}
            for s in agent_skills]
    rows += [{"id": t["name"], "name": t["name"], "description": t["description"], "kind": "tool",
              "tags": ["tool", t["namespace"]], "examples": []} for t in tools.list_tools()["tools"]]
    rows += [{"id": a["name"], "name": a["name"], "description": a.get("description", ""), "kind": "action",
              "tags": ["action"], "examples": []} for a in actions.list_actions()["actions"]]
    return rows


def paged(key: str, rows: list[dict[str, Any]], limit: int, cursor: str | None) -> dict[str, Any]:
    """One page of a catalog; the cursor is the position of the page's last row."""
    after = parse_cursor(cursor) or 0
    window = list(enumerate(rows[after:after + limit + 1], start=after + 1))
    items, next_cursor = page(window, limit)
    return {key: items, "next_cursor": next_cursor}


class RegistryService:
    """What the method table calls for ``_cleveragents/registry/{action,actor,skill,project}/list``.

    The catalogs are read from the configuration when the backend starts; the actions
    are reloaded when their files change."""

    def __init__(self, actions: ActionRegistry, tools: ToolRegistry | None = None, *,
                 actors: list[dict[str, Any]] | None = None, projects: list[dict[str, Any]] | None = None,
                 agent_skills: Iterable[Mapping[str, Any]] = ()) -> None:
        self._actions = actions
        self._tools = tools or ToolRegistry()
        self._actors = actors or []
        self._projects = projects or []
        self._agent_skills = [dict(skill) for skill in agent_skills]

    async def list_actions(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._actions.list_actions)  # loading reads files

    async def list_actors(self, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        return paged("actors", self._actors, limit, cursor)

    async def list_projects(self, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        return paged("projects", self._projects, limit, cursor)

    async def list_skills(self, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        rows = await asyncio.to_thread(skill_rows, self._agent_skills, self._tools, self._actions)
        return paged("skills", rows, limit, cursor)


class ResourceRegistryService:
    """What the method table calls for ``_cleveragents/registry/resource/list``."""

    def __init__(self, resources: list[dict[str, Any]]) -> None:
        self._resources = resources

    async def list_resources(self, type_name: str | None = None, limit: int = 100,
                             cursor: str | None = None) -> dict[str, Any]:
        rows = [r for r in self._resources if type_name is None or r["type_name"] == type_name]
        return paged("resources", rows, limit, cursor)
