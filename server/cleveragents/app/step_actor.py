"""The plan's actor as a plan step's tool sees it (``ToolContext.actor``).

Tools run in worker threads; actors are asynchronous. ``StepActor.run`` is called
from the tool's thread and runs the turn on the event loop, waiting for it (a plan
cancel stops it). On the way it records every tool call the actor makes, which
become the step's child decision nodes, and the usage the provider reports, which
counts against the plan's budget: passing it stops the actor (its streams are
closed) with ``BudgetExceededError``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from cleveragents.domain.actor import Actor, ActorEvent, Budget, ToolCall, Turn, Usage
from cleveragents.domain.errors import BudgetExceededError
from cleveragents.domain.tools import ToolCancelled

POLL_SECONDS = 0.05


class StepActor:
    def __init__(self, actor: Actor, loop: asyncio.AbstractEventLoop, cancelled: threading.Event,
                 budget: Budget, spent: Usage, plan_id: str):
        self.actor = actor
        self.name = actor.name
        self._loop = loop
        self._cancelled = cancelled
        self._budget = budget
        self._spent = spent
        self._plan_id = plan_id
        self.calls: list[ToolCall] = []
        self.usage = Usage()
        self.check: Callable[[], None] | None = None

    def run(self, turn: Turn) -> list[ActorEvent]:
        """The turn's events (tool calls and usage included), from a worker thread.
        ``check`` (the step's ``check_cancelled``) is asked while it waits: what it
        raises (the step's time limit) stops the turn."""
        check = self.check
        future = asyncio.run_coroutine_threadsafe(self._collect(turn), self._loop)
        while True:
            try:
                return future.result(POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                if self._cancelled.is_set():
                    future.cancel()
                    raise ToolCancelled() from None
                if check is not None:
                    try:
                        check()
                    except BaseException:
                        future.cancel()
                        raise

    async def _collect(self, turn: Turn) -> list[ActorEvent]:
        events: list[ActorEvent] = []
        stream = self.actor.respond(turn)
        try:
            async for event in stream:
                events.append(event)
                if isinstance(event, ToolCall):
                    self.calls.append(event)
                elif isinstance(event, Usage):
                    self.usage = self.usage + event
                    self._check()
        finally:
            if (aclose := getattr(stream, "aclose", None)) is not None:
                with contextlib.suppress(RuntimeError):
                    await aclose()
        return events

    def _check(self) -> None:
        total = self._spent + self.usage
        if (limit := self._budget.exceeded_by(total)) is not None:
            raise BudgetExceededError(f"Plan budget exceeded: {limit} is {getattr(self._budget, limit)}", {
                "plan_id": self._plan_id, "limit": limit, "max": getattr(self._budget, limit),
                "used": total.to_dict(), "actor": self.name})

    @staticmethod
    def spent_by(metadata: dict[str, Any]) -> Usage:
        return Usage.from_dict(metadata.get("usage"))
