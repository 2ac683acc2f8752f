"""A plan's steps shown while the plan runs: ACP ``plan`` entries (pending, in
progress, completed) and one ``tool_call`` per step, opened ``in_progress`` when the
step starts and updated ``completed`` or ``failed`` when it ends. The plan service
tells each start and end (``CallContext.on_step``) as it happens.

A ``shell.run`` step's output (its log) goes into its tool call: in a client
terminal when the client has them (``terminals.py``), else as text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from cleveragents.transports.agent_client.terminals import Terminals, shown_tail
from cleveragents.transports.agent_client.wire import AgentClientError, Connection

TOOL_KINDS = {"fs.read": "read", "fs.glob": "search", "fs.search": "search", "shell.run": "execute",
              "fs.delete": "delete", "fs.move": "move", "fs.write": "edit", "fs.replace": "edit",
              "patch.apply": "edit", "actor.edit": "edit"}
COMMAND_TOOLS = frozenset({"shell.run"})
Call = Callable[..., Awaitable[dict[str, Any]]]


def tool_kind(tool: str) -> str:
    return TOOL_KINDS.get(tool, "other")


class LiveSteps:
    """One plan run's steps, as the session's updates."""

    def __init__(self, connection: Connection, session_id: str, plan: dict[str, Any], call: Call,
                 terminals: Terminals | None = None):
        self._connection = connection
        self._session_id = session_id
        self._call = call
        self._terminals = terminals
        self.plan_id: str = plan["plan_id"]
        self._steps: list[dict[str, Any]] = list(plan.get("steps") or [])
        self.entries = [{"content": f"{step['id']}: {step['tool']}" + (f" ({step['rationale']})" if step.get("rationale")
                                                                         else ""),
                         "priority": "medium", "status": "pending"} for step in self._steps]
        self._opened: set[str] = set()
        self._outputs: set[asyncio.Task[None]] = set()

    def _update(self, update: dict[str, Any]) -> None:
        self._connection.notify("session/update", {"sessionId": self._session_id, "update": update})

    def show_entries(self) -> None:
        self._update({"sessionUpdate": "plan", "entries": [dict(entry) for entry in self.entries]})

    def tool_call_id(self, step_id: str) -> str:
        return f"{self.plan_id}-{step_id}"

    def on_step(self, event: dict[str, Any]) -> None:
        """``CallContext.on_step``: called on the event loop as a step starts or ends."""
        index, tool = event.get("index"), str(event.get("tool", ""))
        if event.get("plan_id") != self.plan_id or not isinstance(index, int) or not 0 <= index < len(self.entries):
            return
        call_id = self.tool_call_id(str(event.get("step_id")))
        step = self._steps[index]
        if event.get("event") == "started":
            self.entries[index]["status"] = "in_progress"
            self.show_entries()
            self._opened.add(call_id)
            self._update({"sessionUpdate": "tool_call", "toolCallId": call_id, "title": _title(step),
                          "kind": tool_kind(tool), "status": "in_progress", "rawInput": step.get("arguments") or {}})
            return
        ok = event.get("outcome") == "succeeded"
        summary = str(event.get("summary") or event.get("outcome") or "")
        self.entries[index]["status"] = "completed"
        if not ok:
            self.entries[index]["content"] += f" (failed: {summary})" if summary else " (failed)"
        self.show_entries()
        update: dict[str, Any] = {"toolCallId": call_id, "status": "completed" if ok else "failed",
                                  "title": f"{tool}: {summary}" if summary else tool}
        if isinstance(event.get("output"), dict):
            update["rawOutput"] = event["output"]
        if call_id in self._opened:
            self._update({"sessionUpdate": "tool_call_update", **update})
        else:  # it ended before it started (a budget ran out)
            self._update({"sessionUpdate": "tool_call", **update, "kind": tool_kind(tool),
                          "rawInput": step.get("arguments") or {}})
        if tool in COMMAND_TOOLS and event.get("decision_id"):
            task = asyncio.ensure_future(self._command_output(call_id, str(event["decision_id"])))
            self._outputs.add(task)
            task.add_done_callback(self._outputs.discard)

    async def settle(self) -> None:
        """Wait until every command step's output is shown."""
        if self._outputs:
            await asyncio.gather(*self._outputs, return_exceptions=True)

    def abandon(self) -> None:
        """The run was cancelled: stop showing outputs (a terminal may wait on the client)."""
        for task in self._outputs:
            task.cancel()

    async def _command_output(self, call_id: str, decision_id: str) -> None:
        try:
            artifacts = (await self._call("_cleveragents/plan/artifacts", {"plan_id": self.plan_id})).get("artifacts")
        except AgentClientError:
            return
        logs = [a for a in artifacts or () if a.get("decision_id") == decision_id]
        if not logs:
            return
        text = logs[0].get("text")
        if not isinstance(text, str):
            text = f"(the output, {logs[0].get('size')} bytes, is too large to show here: see the plan's artifacts)"
        terminal_id = await self._terminals.open(text) if self._terminals is not None else None
        if terminal_id is None:
            self._update({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": [
                {"type": "content", "content": {"type": "text", "text": f"```\n{shown_tail(text)}\n```"}}]})
            return
        self._update({"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                      "content": [{"type": "terminal", "terminalId": terminal_id}]})
        assert self._terminals is not None
        await self._terminals.close(terminal_id)


def _title(step: dict[str, Any]) -> str:
    rationale = step.get("rationale")
    return f"{step.get('tool')}: {rationale}" if rationale else f"{step.get('tool')} ({step.get('id')})"
