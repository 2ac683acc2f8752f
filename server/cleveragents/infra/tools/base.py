"""A base for tools whose arguments are a pydantic model.

A subclass sets ``name``, ``description`` and ``Arguments`` (a model) and writes
``execute``; the base gives it the schema, the validation and the ``Tool`` protocol.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import pydantic

from cleveragents.domain.errors import ValidationError
from cleveragents.domain.tools import ToolContext, ToolResult

ArgumentsT = TypeVar("ArgumentsT", bound=pydantic.BaseModel)
_SCHEMAS: dict[type[pydantic.BaseModel], dict[str, Any]] = {}


class StrictArguments(pydantic.BaseModel):
    """Arguments models refuse unknown keys, so a typo in an action is caught."""

    model_config = pydantic.ConfigDict(extra="forbid")


class ModelTool(abc.ABC, Generic[ArgumentsT]):
    name: str
    description: str
    Arguments: type[ArgumentsT]

    @property
    def namespace(self) -> str:
        return self.name.split(".", 1)[0]

    def input_schema(self) -> dict[str, Any]:
        # Building a JSON schema is slow (milliseconds), and every listing and task start asks.
        cached = _SCHEMAS.get(self.Arguments)
        if cached is None:
            cached = _SCHEMAS[self.Arguments] = without_titles(self.Arguments.model_json_schema())
        return copy.deepcopy(cached)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.parse(arguments).model_dump()

    def parse(self, arguments: Mapping[str, Any]) -> ArgumentsT:
        try:
            return self.Arguments.model_validate(dict(arguments))
        except pydantic.ValidationError as exc:
            errors = [
                {"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"], **_details(err)}
                for err in exc.errors(include_url=False, include_input=False)
            ]
            raise ValidationError(f"Invalid arguments for {self.name}", {"tool": self.name, "errors": errors}) from None

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return self.execute(self.parse(arguments), context)

    @abc.abstractmethod
    def execute(self, arguments: ArgumentsT, context: ToolContext) -> ToolResult: ...


def _details(error: Any) -> dict[str, Any]:
    """What an error's context says in plain values (a limit, the construct a pattern
    lacks); an exception object in it stays out."""
    return {key: value for key, value in (error.get("ctx") or {}).items()
            if isinstance(value, (str, int, float, bool)) and key not in ("loc", "msg", "type")}


def without_titles(schema: Any) -> Any:
    """Pydantic titles every schema after its field name; that is noise to a client.
    A property *named* ``title`` maps to a schema (a dict), so it is kept."""
    if isinstance(schema, dict):
        return {
            key: without_titles(value) for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    return schema
