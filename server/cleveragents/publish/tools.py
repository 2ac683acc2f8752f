"""Plain Python functions as tools: ``@tool``, or a function handed to ``Agent(tools=...)``.

The signature and its type hints give the JSON schema and the validation (through a
pydantic model built once per function); the docstring's first paragraph gives the
description. A ``FunctionTool`` implements the domain ``Tool`` protocol, so a plan
can run it too, and stays callable like the function it wraps.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, overload

import pydantic
import pydantic_core

from cleveragents.domain.actor import ToolInfo
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.tools import ToolContext, ToolResult
from cleveragents.infra.tools.base import without_titles
from cleveragents.publish.threads import run_user_code

_UNSUPPORTED_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


class FunctionTool:
    """A function whose arguments are checked against its signature before it runs."""

    def __init__(self, func: Callable[..., Any], *, name: str | None = None, description: str | None = None):
        self.func = func
        self.name: str = name or str(getattr(func, "__name__", ""))
        if not all(part.isidentifier() for part in self.name.split(".")):
            raise TypeError(f"a tool needs a name like `search_web`: pass tool(name=...) for {func!r}")
        self.description = description if description is not None else first_paragraph(func.__doc__)
        self._arguments = _arguments_model(func, self.name)
        self._schema = without_titles(self._arguments.model_json_schema(by_alias=True))
        functools.update_wrapper(self, func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"

    @property
    def namespace(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    def input_schema(self) -> dict[str, Any]:
        copy: dict[str, Any] = json.loads(json.dumps(self._schema))  # a copy a caller may change
        return copy

    def info(self) -> ToolInfo:
        return ToolInfo(self.name, self.description, self.input_schema())

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments by parameter name, converted to the hinted types, defaults filled."""
        try:
            model = self._arguments.model_validate(dict(arguments))
        except pydantic.ValidationError as exc:
            errors = [
                {"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]}
                for err in exc.errors(include_url=False, include_input=False)
            ]
            raise ValidationError(f"Invalid arguments for {self.name}", {"tool": self.name, "errors": errors}) from None
        # Attributes, not model_dump(): a parameter hinted as a model gets the model.
        return {field.alias or key: getattr(model, key) for key, field in type(model).model_fields.items()}

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        """Validate and call; a sync function runs in a worker thread, so it never
        blocks the event loop."""
        return await self.call_checked(self.validate(arguments))

    async def call_checked(self, checked: Mapping[str, Any]) -> Any:
        """Call with arguments that ``validate`` already returned."""
        if self.is_async:
            return await self.func(**checked)
        return await run_user_code(self.func, **checked)

    def run(self, arguments: dict[str, Any], context: ToolContext | None = None) -> ToolResult:
        """The ``Tool`` protocol's entry point; it is called from a worker thread, where
        an async function gets an event loop of its own."""
        checked = self.validate(arguments)
        value = asyncio.run(self.func(**checked)) if self.is_async else self.func(**checked)
        return ToolResult(output={"result": to_jsonable(value)}, summary=render(value))


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(func: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """``@tool`` or ``@tool(name=..., description=...)``."""
    if func is not None:
        return FunctionTool(func, name=name, description=description)
    return lambda f: FunctionTool(f, name=name, description=description)


def as_tool(value: Any) -> FunctionTool:
    if isinstance(value, FunctionTool):
        return value
    if callable(value):
        return FunctionTool(value)
    raise TypeError(f"a tool is a function or a @tool, not {type(value).__name__}")


def first_paragraph(doc: str | None) -> str:
    paragraph = inspect.cleandoc(doc or "").split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def to_jsonable(value: Any) -> Any:
    return pydantic_core.to_jsonable_python(value, fallback=str)


def render(value: Any) -> str:
    """A result as reply text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)


def _arguments_model(func: Callable[..., Any], name: str) -> type[pydantic.BaseModel]:
    fields: dict[str, Any] = {}
    for index, param in enumerate(inspect.signature(func, eval_str=True).parameters.values()):
        if param.kind in _UNSUPPORTED_KINDS:
            raise TypeError(f"tool {name}: parameter {param.name} is {_UNSUPPORTED_KINDS[param.kind]}; "
                            "tools take named arguments")
        default = ... if param.default is inspect.Parameter.empty else param.default
        # Aliased field names, so a parameter may be called `json` or `schema` or
        # `_hidden` without clashing with pydantic's own attributes.
        hint = Any if param.annotation is inspect.Parameter.empty else param.annotation
        fields[f"p{index}"] = (hint, pydantic.Field(default, alias=param.name))
    config = pydantic.ConfigDict(extra="forbid")
    return pydantic.create_model(f"{name}_arguments", __config__=config, **fields)
