"""``python/<module>:<callable>``: an in-process agent written in Python.

The target is a handler (a function, async function or generator, as for
``Agent(handler=...)``) or an object with ``respond(turn)`` (an ``Agent``, any
actor). The module is imported on the first turn, in a worker thread, so naming a
slow or broken module never stalls the server; a failure is an ``ActorError`` that
says what could not be imported.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from cleveragents.domain.actor import ActorError, ActorEvent, Turn
from cleveragents.domain.errors import ValidationError, failure_reason
from cleveragents.infra.actors.handlers import as_events, handler_events, takes_turn

logger = logging.getLogger(__name__)


def parse_target(model: str) -> tuple[str, str]:
    """``package.module:attr.path`` -> (module, attribute path)."""
    module, sep, attribute = model.partition(":")
    if not sep or not module or not attribute or not all(
            part.isidentifier() for part in (*module.split("."), *attribute.split("."))):
        raise ValidationError.for_field(
            ["actor_name"], "a python actor is named python/<module>:<callable>, e.g. python/my_agents:triage",
            message=f"Invalid python actor: python/{model}")
    return module, attribute


class PythonActor:
    def __init__(self, name: str, target: str):
        self.name = name
        self._module, self._attribute = parse_target(target)
        self._target: Any = None
        self._lock = asyncio.Lock()

    async def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        target = await self._load()
        if not callable(getattr(target, "respond", None)):
            async for event in handler_events(target, turn, takes_turn(target)):
                yield event
            return
        async for item in target.respond(turn):  # an actor; plain text is taken as a handler's
            for event in as_events(item):
                yield event

    async def _load(self) -> Any:
        async with self._lock:
            if self._target is None:
                self._target = await asyncio.to_thread(self._import)
            return self._target

    def _import(self) -> Any:
        data = {"actor": self.name, "module": self._module, "attribute": self._attribute}
        try:
            target: Any = importlib.import_module(self._module)
        except Exception as exc:  # the user's module: any error it raises says why (its traceback: the log)
            logger.warning("actor %s can't import %s", self.name, self._module, exc_info=exc)
            raise ActorError(f"{self.name}: can't import {self._module}: {failure_reason(exc)}",
                             {**data, "reason": "import_failed"}) from None
        for part in self._attribute.split("."):
            if not hasattr(target, part):
                raise ActorError(f"{self.name}: {self._module} has no attribute {self._attribute}",
                                 {**data, "reason": "not_found"})
            target = getattr(target, part)
        if not callable(target) and not callable(getattr(target, "respond", None)):
            raise ActorError(f"{self.name}: {self._module}:{self._attribute} is neither callable nor an actor",
                             {**data, "reason": "not_callable"})
        return target
