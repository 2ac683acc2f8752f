"""The tool and action registries, and the checks run when a plan is created.

The composition root hands in the tools and an action loader (infra reads the
workspace's action files); nothing here reads files itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, NamedTuple

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


class RegistryService:
    """What the method table calls for ``_cleveragents/registry/action/list``."""

    def __init__(self, actions: ActionRegistry) -> None:
        self._actions = actions

    async def list_actions(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._actions.list_actions)  # loading reads files
