"""Our tools as a turn's tools: their descriptions, and the invoker that runs them.

A tool runs in a worker thread of the ``ToolRunner`` (tools are synchronous), within
its time limit, against the view it is given:
for an agent task, the workspace as it is, with only the read-only tools; in a plan
step, the plan's overlay, where writes land for review. What the actor gets back is
``bounded``: a model reads a few pages of it at most, and the actor serializes it on
the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from cleveragents.domain.actor import ToolInfo, ToolInvoker
from cleveragents.domain.errors import AuthorizationError
from cleveragents.domain.tools import Tool, ToolContext
from cleveragents.infra.tools.runner import ToolRunner

READ_ONLY = frozenset({"fs.read", "fs.glob", "fs.search"})
EDITING = READ_ONLY | {"fs.write", "fs.replace", "patch.apply"}
MAX_RESULT_CHARS = 64_000  # text kept of a result for an actor (the chat actors pass on 32,000)


class ToolBox:
    def __init__(self, tools: Callable[[], Sequence[Tool]], allowed: Collection[str] = READ_ONLY,
                 runner: ToolRunner | None = None):
        self._tools = tools
        self._allowed = frozenset(allowed)
        self._runner = runner or ToolRunner()

    def available(self) -> dict[str, Tool]:
        return {tool.name: tool for tool in self._tools() if tool.name in self._allowed}

    def infos(self) -> list[ToolInfo]:
        return [ToolInfo(t.name, t.description, t.input_schema()) for t in self.available().values()]

    def invoker(self, context: Callable[[], ToolContext],
                on_result: Callable[[str, Any], None] | None = None) -> ToolInvoker:
        """Runs a tool in a fresh ``context()``; ``on_result(name, ToolResult)`` sees
        each result (the reads and writes a plan records)."""

        async def invoke(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
            tool = self.available().get(name)
            if tool is None:
                raise AuthorizationError(f"{name} is not available to this actor here",
                                         {"tool": name, "available": sorted(self.available())})
            result = await self._runner.call(tool, dict(arguments), context())
            if on_result is not None:
                on_result(name, result)
            return await asyncio.to_thread(bounded, {"summary": result.summary, **result.output}, MAX_RESULT_CHARS)

        return invoke


def bounded(value: Any, budget: int) -> Any:
    """A copy of a JSON-like ``value`` holding at most about ``budget`` characters of
    text: a long string is cut (saying how much is left out), and once the budget is
    spent a list ends with how many items are left out."""
    left = [budget]

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            if len(item) <= left[0]:
                left[0] -= len(item)
                return item
            kept, left[0] = item[:max(left[0], 0)], 0
            return f"{kept}... ({len(item) - len(kept)} more characters)"
        if isinstance(item, Mapping):
            return {key: walk(val) for key, val in item.items()}
        if isinstance(item, (list, tuple)):
            out = []
            for index, element in enumerate(item):
                if left[0] <= 0:
                    out.append(f"... ({len(item) - index} more items)")
                    break
                out.append(walk(element))
            return out
        return item

    return walk(value)
