"""Actions: named templates of typed arguments and ordered tool steps.

A step's arguments are templates. A string that is exactly ``{{ name }}`` becomes
the argument's typed value; ``{{ name }}`` inside a longer string is replaced by the
value's text (a string as is, anything else as JSON). Templates nest in lists and
dicts. A step argument that renders to ``None`` (an optional argument left unset)
is left out, so the tool's own default applies. A step whose tool is
``actor.edit`` asks the session's actor for edits; nothing here treats it apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from cleveragents.domain.errors import ValidationError

ArgumentType = Literal["string", "integer", "number", "boolean", "array", "object"]
ARGUMENT_TYPES: tuple[str, ...] = get_args(ArgumentType)

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ACTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def type_matches(kind: str, value: Any) -> bool:
    if isinstance(value, bool):  # bool is an int in Python, never in a schema
        return kind == "boolean"
    checks: dict[str, type | tuple[type, ...]] = {
        "string": str, "integer": int, "number": (int, float), "array": (list, tuple), "object": Mapping,
    }
    return kind in checks and isinstance(value, checks[kind])


@dataclass(frozen=True, slots=True)
class ActionArgument:
    name: str
    type: ArgumentType
    required: bool = True
    default: Any = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "required": self.required, "default": self.default,
                "description": self.description}


@dataclass(frozen=True, slots=True)
class ActionStep:
    id: str
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    rationale: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "arguments": dict(self.arguments), "rationale": self.rationale}


def _error(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


def placeholders(template: Any) -> set[str]:
    if isinstance(template, str):
        return set(_PLACEHOLDER.findall(template))
    if isinstance(template, Mapping):
        return set().union(*(placeholders(value) for value in template.values()))
    if isinstance(template, (list, tuple)):
        return set().union(*(placeholders(item) for item in template))
    return set()


def _render(template: Any, bound: Mapping[str, Any]) -> Any:
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            return bound[whole.group(1)]
        return _PLACEHOLDER.sub(lambda match: _as_text(bound[match.group(1)]), template)
    if isinstance(template, Mapping):
        return {key: _render(value, bound) for key, value in template.items()}
    if isinstance(template, (list, tuple)):
        return [_render(item, bound) for item in template]
    return template


def _as_text(value: Any) -> str:
    if value is None:  # an unset optional argument leaves no text
        return ""
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True, slots=True)
class Action:
    """``source`` is ``"builtin"`` or the defining file, relative to the workspace."""

    name: str
    description: str
    arguments: tuple[ActionArgument, ...]
    steps: tuple[ActionStep, ...]
    source: str = "builtin"

    def __post_init__(self) -> None:
        errors = self._definition_errors()
        if errors:
            raise ValidationError(f"action {self.name!r} is not valid", {"action": self.name, "errors": errors})

    def _definition_errors(self) -> list[dict[str, Any]]:
        errors = []
        if not _ACTION_NAME.fullmatch(self.name):
            errors.append(_error(["name"], "a name is letters, digits, '.', '_' or '-'", "invalid_name"))
        seen: set[str] = set()
        for argument in self.arguments:
            loc: list[Any] = ["arguments", argument.name]
            if not _ARGUMENT_NAME.fullmatch(argument.name):
                errors.append(_error(loc, "an argument name is an identifier", "invalid_name"))
            if argument.name in seen:
                errors.append(_error(loc, "defined twice", "duplicate"))
            seen.add(argument.name)
            if argument.type not in ARGUMENT_TYPES:
                errors.append(_error([*loc, "type"], f"one of {', '.join(ARGUMENT_TYPES)}", "invalid_type"))
            elif argument.default is not None and not type_matches(argument.type, argument.default):
                errors.append(_error([*loc, "default"], f"the default is not of type {argument.type}", "type_error"))
        if not self.steps:
            errors.append(_error(["steps"], "an action needs at least one step", "missing"))
        step_ids: set[str] = set()
        for index, step in enumerate(self.steps):
            where: list[Any] = ["steps", index]
            if not step.id or step.id in step_ids:
                errors.append(_error([*where, "id"], "a step id is non-empty and unique", "duplicate"))
            step_ids.add(step.id)
            if not step.tool:
                errors.append(_error([*where, "tool"], "a step names its tool", "missing"))
            for unknown in sorted(placeholders(step.arguments) - seen):
                errors.append(_error([*where, "arguments"], f"unknown placeholder {{{{ {unknown} }}}}",
                                     "unknown_placeholder"))
        return errors

    def bind(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The checked arguments, defaults filled in; an optional argument with no
        default is bound to ``None``."""
        errors = [_error([name], "not an argument of this action", "unknown_argument")
                  for name in values if name not in {argument.name for argument in self.arguments}]
        bound: dict[str, Any] = {}
        for argument in self.arguments:
            if argument.name not in values or values[argument.name] is None:
                if argument.required and argument.default is None:
                    errors.append(_error([argument.name], "a required argument is missing", "missing"))
                bound[argument.name] = argument.default
            elif type_matches(argument.type, values[argument.name]):
                bound[argument.name] = values[argument.name]
            else:
                errors.append(_error([argument.name], f"expected {argument.type}", "type_error"))
        if errors:
            raise ValidationError(f"invalid arguments for action {self.name!r}",
                                  {"action": self.name, "errors": errors})
        return bound

    def render(self, bound: Mapping[str, Any]) -> list[ActionStep]:
        missing = sorted(set().union(*(placeholders(step.arguments) for step in self.steps)) - set(bound))
        if missing:
            errors = [_error([name], f"unknown placeholder {{{{ {name} }}}}", "unknown_placeholder")
                      for name in missing]
            raise ValidationError(f"action {self.name!r} has unbound placeholders",
                                  {"action": self.name, "errors": errors})
        return [
            ActionStep(step.id, step.tool, {
                key: value for key, value in _render(step.arguments, bound).items() if value is not None
            }, step.rationale)
            for step in self.steps
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "source": self.source,
            "arguments": [argument.to_dict() for argument in self.arguments],
            "steps": [step.to_dict() for step in self.steps],
        }
