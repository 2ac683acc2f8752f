"""Work-done progress for long calls (LSP ``$/progress``), when the caller asked for it.

The caller passes a ``workDoneToken``; the facade puts it in the CallContext. Without
a token or a way to notify, every method here does nothing.
"""

from __future__ import annotations

from typing import Any

from cleveragents.app.calls import CallContext

PROGRESS_NOTIFICATION = "$/progress"


class Progress:
    def __init__(self, context: CallContext | None, title: str):
        self._token = context.progress_token if context is not None else None
        self._notify = context.notify if context is not None else None
        self._on_step = context.on_step if context is not None else None
        self._title = title
        self._open = False

    @property
    def active(self) -> bool:
        return self._token is not None and self._notify is not None

    def _send(self, value: dict[str, Any]) -> None:
        if self.active:
            assert self._notify is not None
            self._notify(PROGRESS_NOTIFICATION, {"token": self._token, "value": value})

    def begin(self, message: str = "", total: int | None = None) -> None:
        self._open = True
        value: dict[str, Any] = {"kind": "begin", "title": self._title, "cancellable": True, "message": message}
        if total:
            value["percentage"] = 0
        self._send(value)

    def report(self, message: str, done: int | None = None, total: int | None = None) -> None:
        value: dict[str, Any] = {"kind": "report", "message": message, "cancellable": True}
        if done is not None and total:
            value["percentage"] = min(100, int(done * 100 / total))
        self._send(value)

    def end(self, message: str = "") -> None:
        if self._open:
            self._open = False
            self._send({"kind": "end", "message": message})

    # -- plan steps, for a caller that follows them (``CallContext.on_step``) --------
    def step_started(self, plan_id: str, index: int, total: int, step_id: str, tool: str) -> None:
        if self._on_step is not None:
            self._on_step({"event": "started", "plan_id": plan_id, "index": index, "total": total,
                           "step_id": step_id, "tool": tool})

    def step_ended(self, plan_id: str, index: int, total: int, decision: Any) -> None:
        """``decision`` is the step's ``domain.plan.Decision``, given as plain data."""
        if self._on_step is not None:
            self._on_step({"event": "ended", "plan_id": plan_id, "index": index, "total": total,
                           "step_id": decision.step_id, "tool": decision.tool, "decision_id": decision.decision_id,
                           "outcome": decision.outcome, "summary": decision.summary, "output": decision.output})
