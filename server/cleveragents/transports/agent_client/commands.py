"""Slash commands: CleverAgents' plans, offered to the editor as ACP commands.

``/plan <action> key=value ...`` makes a plan from an action, runs it in the plan's
overlay, shows its steps (``plan`` entries, ``tool_call``s) and its diff, and asks at
each approval gate the session's mode sets (``session/request_permission``) before
applying it; ``/rollback`` undoes the session's last applied plan byte for byte;
``/actions`` lists the actions ``/plan`` can use.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cleveragents.transports.agent_client import diffs
from cleveragents.transports.agent_client.plan_steps import LiveSteps, tool_kind
from cleveragents.transports.agent_client.sessions import AgentSession
from cleveragents.transports.agent_client.updates import text_update
from cleveragents.transports.agent_client.wire import AgentClientError, Connection

COMMANDS = (
    {"name": "plan", "description": "Plan an action, run it in an overlay, review its diff, then apply it",
     "input": {"hint": "<action> name=value ..."}},
    {"name": "rollback", "description": "Undo this session's last applied plan, byte for byte",
     "input": {"hint": "[plan id]"}},
    {"name": "actions", "description": "List the actions /plan can use"},
)
COMMAND_NAMES = frozenset(command["name"] for command in COMMANDS)
# The options of every permission request: "always" is remembered per session and gate.
PERMISSION_OPTIONS = (
    {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
)
# A facade call: method, params, and the editor that writes a plan's files (or None).
Call = Callable[..., Awaitable[dict[str, Any]]]


def command_of(text: str) -> tuple[str, str] | None:
    """``(name, input)`` when the prompt is one of our slash commands."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    return (name, rest.strip()) if name in COMMAND_NAMES else None


class CommandRunner:
    """Runs one session's slash commands through the facade (``call``)."""

    def __init__(self, connection: Connection, call: Call, root: Path, writes_files: bool = False,
                 terminals: bool = False, reads_files: bool = False):
        self._connection = connection
        self._call = call
        self._root = root
        self._writes_files = writes_files  # the client declared fs.writeTextFile
        self._terminals = terminals  # ... terminal
        self._reads_files = reads_files  # ... fs.readTextFile

    def _editor(self, session: AgentSession) -> Any:
        if not self._writes_files:
            return None
        from cleveragents.transports.agent_client.client_files import ClientFiles

        return ClientFiles(self._connection, session.session_id)

    def _reading(self, session: AgentSession) -> dict[str, Any]:
        """The call's ``reader`` (``app.calls.FileReader``) when the client reads files."""
        if not self._reads_files:
            return {}
        from cleveragents.transports.agent_client.client_files import ClientFiles

        return {"reader": ClientFiles(self._connection, session.session_id)}

    def say(self, session: AgentSession, text: str) -> None:
        self._connection.notify("session/update", text_update(session.session_id, "agent_message_chunk", text))

    def _update(self, session: AgentSession, update: dict[str, Any]) -> None:
        self._connection.notify("session/update", {"sessionId": session.session_id, "update": update})

    async def run(self, session: AgentSession, name: str, argument: str) -> None:
        try:
            if name == "actions":
                await self._actions(session)
            elif name == "rollback":
                await self._rollback(session, argument)
            else:
                await self._plan(session, argument)
        except AgentClientError as exc:  # the command's failure is the turn's answer, for the user to read
            self.say(session, f"/{name} failed: {exc.message}" + (f" ({exc.data})" if exc.data else ""))

    async def _actions(self, session: AgentSession) -> None:
        actions = (await self._call("_cleveragents/registry/action/list", {})).get("actions") or []
        lines = [f"- {a['name']}: {a.get('description', '')} (arguments: "
                 + (", ".join(f"{arg['name']}{'' if arg.get('required') else '?'}" for arg in a.get("arguments") or [])
                    or "none") + ")" for a in actions]
        self.say(session, "Actions for /plan:\n" + "\n".join(lines))

    async def _arguments(self, action: str, words: list[str]) -> dict[str, Any]:
        """``name=value`` words as the action's arguments, typed as the action declares."""
        actions = (await self._call("_cleveragents/registry/action/list", {})).get("actions") or []
        declared = {arg["name"]: arg.get("type") for a in actions if a["name"] == action
                    for arg in a.get("arguments") or []}
        arguments: dict[str, Any] = {}
        for word in words:
            key, equals, value = word.partition("=")
            if not equals or not key:
                raise AgentClientError(-32602, f"expected name=value, got {word!r}", {"action": action})
            kind = declared.get(key)
            if kind == "boolean" and value.lower() in ("true", "false"):
                arguments[key] = value.lower() == "true"
            elif kind == "integer" and value.lstrip("-").isdigit():
                arguments[key] = int(value)
            else:
                arguments[key] = value
        return arguments

    async def _plan(self, session: AgentSession, argument: str) -> None:
        try:
            words = shlex.split(argument)
        except ValueError as exc:
            raise AgentClientError(-32602, f"the command's input can't be read: {exc}") from None
        if not words:
            raise AgentClientError(-32602, "name an action: /plan <action> name=value ... (/actions lists them)")
        action = words[0]
        plan = await self._call("_cleveragents/plan/use", {
            "action_name": action, "arguments": await self._arguments(action, words[1:]),
            "automation_profile": session.mode, "session_id": session.session_id})
        plan_id = plan["plan_id"]
        terminals = None
        if self._terminals:
            from cleveragents.transports.agent_client.terminals import Terminals

            terminals = Terminals(self._connection, session.session_id, session.cwd)
        steps = LiveSteps(self._connection, session.session_id, plan, self._call, terminals)
        steps.show_entries()
        try:
            await self._execute_and_apply(session, plan, steps)
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(plan_id))
            raise

    async def _cancel(self, plan_id: str) -> None:
        try:
            await self._call("_cleveragents/plan/cancel", {"plan_id": plan_id})
        except AgentClientError:
            pass  # past the point a cancel applies (applied already): nothing to undo here

    async def _execute_and_apply(self, session: AgentSession, plan: dict[str, Any], steps: LiveSteps) -> None:
        plan_id, action = plan["plan_id"], plan.get("action_name", "")
        gate_id = f"{plan_id}-execute"
        if plan.get("state") == "input-required":  # the mode's gate before execute
            self._update(session, {"sessionUpdate": "tool_call", "toolCallId": gate_id, "title": f"Run the plan {action}",
                                   "kind": "think", "status": "pending", "rawInput": {"steps": plan.get("steps")}})
            if not await self.permission(session, "execute", gate_id):
                await self._cancel(plan_id)
                self._update(session, {"sessionUpdate": "tool_call_update", "toolCallId": gate_id, "status": "failed"})
                self.say(session, f"The plan {plan_id} was not run: you rejected it.")
                return
            self._update(session, {"sessionUpdate": "tool_call_update", "toolCallId": gate_id, "status": "completed"})
        try:  # each step shows as it starts and ends (steps.on_step)
            executed = await self._call("_cleveragents/plan/execute", {"plan_id": plan_id}, on_step=steps.on_step,
                                        **self._reading(session))
        except asyncio.CancelledError:
            steps.abandon()  # a terminal may wait on the client: the cancel goes first
            raise
        except AgentClientError:  # a step failed: the outputs of those that ran still show
            await steps.settle()
            raise
        await steps.settle()
        tree = await self._call("_cleveragents/plan/tree", {"plan_id": plan_id})
        for decision in tree.get("decisions") or ():
            if decision.get("kind") == "step":
                continue  # shown live
            # The tool calls an actor made inside a step, once the step is over.
            ok = decision.get("outcome") == "succeeded"
            self._update(session, {
                "sessionUpdate": "tool_call", "toolCallId": f"{plan_id}-{decision['decision_id']}",
                "title": f"{decision.get('tool')}: {decision.get('summary') or decision.get('outcome')}",
                "kind": tool_kind(str(decision.get("tool"))), "status": "completed" if ok else "failed"})
        if executed.get("state") == "failed":
            self.say(session, f"The plan {plan_id} failed: {executed.get('reason') or 'see its steps'}.")
            return
        reading = self._reading(session)
        diff = await self._call("_cleveragents/plan/diff", {"plan_id": plan_id}, **reading)
        changes_id = f"{plan_id}-changes"
        contents = await diffs.diff_contents(self._root, diff, reading.get("reader"))
        self._update(session, {"sessionUpdate": "tool_call", "toolCallId": changes_id,
                               "title": f"Changes of the plan {action}", "kind": "edit",
                               "status": "pending", "content": contents,
                               "locations": [{"path": c["path"]} for c in contents if c["type"] == "diff"]})
        if not contents:
            self.say(session, f"The plan {plan_id} changes no file.")
            return
        # The mode's gate before apply holds the plan in input-required; autonomous applies at once.
        if executed.get("state") == "input-required" and not await self.permission(session, "apply", changes_id):
            self._update(session, {"sessionUpdate": "tool_call_update", "toolCallId": changes_id, "status": "failed"})
            self.say(session, f"The plan {plan_id} was not applied; its changes stay in its overlay.")
            return
        await self._call("_cleveragents/plan/apply", {"plan_id": plan_id}, self._editor(session), **reading)
        self._update(session, {"sessionUpdate": "tool_call_update", "toolCallId": changes_id, "status": "completed"})
        self.say(session, f"Applied the plan {plan_id} ({len(contents)} file(s)). /rollback undoes it.")

    async def permission(self, session: AgentSession, gate: str, tool_call_id: str) -> bool:
        """Ask the user at a gate (``execute``, ``apply``), unless they answered
        "always" for this gate in this session. A cancelled request is a refusal."""
        title = "Run this plan?" if gate == "execute" else "Apply these changes?"
        if gate in session.always:
            return session.always[gate]
        answer = await self._connection.request("session/request_permission", {
            "sessionId": session.session_id, "toolCall": {"toolCallId": tool_call_id, "title": title},
            "options": [dict(option) for option in PERMISSION_OPTIONS]})
        outcome = (answer or {}).get("outcome") if isinstance(answer, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) and outcome.get("outcome") == "selected" else None
        allowed = chosen in ("allow_once", "allow_always")
        if chosen in ("allow_always", "reject_always"):
            session.always[gate] = allowed
        return allowed

    async def _rollback(self, session: AgentSession, argument: str) -> None:
        plan_id = argument.split()[0] if argument.split() else await self._last_applied(session)
        if plan_id is None:
            self.say(session, "No applied plan of this session to roll back.")
            return
        done = await self._call("_cleveragents/plan/rollback", {"plan_id": plan_id}, self._editor(session))
        files = done.get("files") or []
        self.say(session, f"Rolled back the plan {plan_id}: restored {len(files)} file(s)"
                 + (": " + ", ".join(files) if files else "") + ".")

    async def _last_applied(self, session: AgentSession) -> str | None:
        newest: tuple[str, str] | None = None
        params: dict[str, Any] = {"session_id": session.session_id, "limit": 500}
        while True:
            page = await self._call("_cleveragents/plan/list", params)
            for plan in page.get("plans") or ():
                if plan.get("phase") == "apply" and plan.get("state") == "completed":
                    stamp = str(plan.get("updated_at", ""))
                    if newest is None or stamp > newest[0]:
                        newest = (stamp, plan["plan_id"])
            if not page.get("next_cursor"):
                return newest[1] if newest else None
            params = {**params, "cursor": page["next_cursor"]}
