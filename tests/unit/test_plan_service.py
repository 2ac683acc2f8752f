"""The plan service's edges, in process with a real container, store and workspace.

Tools registered here are real tools (the registry is the extension point for them):
one waits on a gate the test opens, one fails on demand.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.tools import ToolContext, ToolResult
from cleveragents.infra.tools.base import ModelTool, StrictArguments


class GateArguments(StrictArguments):
    name: str = "gate"


class GateTool(ModelTool[GateArguments]):
    """Waits until the test opens its gate (or the plan is cancelled)."""

    name = "test.gate"
    description = "Wait for the test"
    Arguments = GateArguments

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    def execute(self, arguments: GateArguments, context: ToolContext) -> ToolResult:
        self.entered.set()
        while not self.gate.wait(0.01):
            context.check_cancelled()
        return ToolResult(summary="passed the gate")


class FlakyArguments(StrictArguments):
    pass


class FlakyTool(ModelTool[FlakyArguments]):
    """Raises a non-domain error while ``failing`` is set."""

    name = "test.flaky"
    description = "Fail on demand"
    Arguments = FlakyArguments
    failing = True

    def execute(self, arguments: FlakyArguments, context: ToolContext) -> ToolResult:
        if self.failing:
            raise RuntimeError("the flaky tool broke")
        return ToolResult(summary="worked")


def write_action(workspace: Path, name: str, steps: str) -> None:
    folder = workspace / ".cleveragents" / "actions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.toml").write_text(f'description = "{name}"\n{steps}')


@pytest.fixture
async def backend(workspace):
    container = Container(Settings(workspace=workspace))
    gate, flaky = GateTool(), FlakyTool()
    container.tool_registry.register(gate)
    container.tool_registry.register(flaky)
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    yield call, gate, flaky, workspace
    gate.gate.set()
    await container.aclose()


async def result(call, method, **params):
    response = await call(method, **params)
    assert "result" in response, response
    return response["result"]


async def error(call, method, **params):
    response = await call(method, **params)
    assert "error" in response, response
    return response["error"]


async def test_cancel_and_prompt_reach_a_plan_whose_execute_is_waiting(backend):
    call, gate, _, workspace = backend
    write_action(workspace, "slow", '[[steps]]\ntool = "test.gate"\n[[steps]]\ntool = "fs.read"\n'
                                    'arguments = { path = "README.md" }\n')
    plan_id = (await result(call, "_cleveragents/plan/use", action_name="slow", automation_profile="autonomous"))["plan_id"]
    execute = asyncio.ensure_future(call("_cleveragents/plan/execute", plan_id=plan_id))
    assert await asyncio.to_thread(gate.entered.wait, 5)
    queued = await asyncio.wait_for(result(call, "_cleveragents/plan/prompt", plan_id=plan_id, guidance="be brief"), 2)
    assert queued["queued"] == 1
    cancelled = await asyncio.wait_for(result(call, "_cleveragents/plan/cancel", plan_id=plan_id), 2)
    assert cancelled["state"] == "cancelled"
    answer = await asyncio.wait_for(execute, 5)
    assert answer["result"]["state"] == "cancelled"
    status = await result(call, "_cleveragents/plan/status", plan_id=plan_id)
    assert (status["phase"], status["state"]) == ("execute", "cancelled")


async def test_a_tool_bug_fails_the_step_and_a_retry_goes_on_from_it(backend):
    call, _, flaky, workspace = backend
    (workspace / "a.txt").write_text("a\n")
    write_action(workspace, "twostep", '[[steps]]\ntool = "fs.replace"\n'
                 'arguments = { pattern = "a", replacement = "aa", glob = "a.txt" }\n[[steps]]\ntool = "test.flaky"\n')
    plan_id = (await result(call, "_cleveragents/plan/use", action_name="twostep", automation_profile="autonomous"))["plan_id"]
    failed = await error(call, "_cleveragents/plan/execute", plan_id=plan_id)
    assert failed["code"] == -32008
    assert failed["data"] == {"plan_id": plan_id, "tool": "test.flaky", "error": "RuntimeError"}
    status = await result(call, "_cleveragents/plan/status", plan_id=plan_id)
    assert (status["phase"], status["state"]) == ("execute", "failed") and "execute" in status["allowed_actions"]

    flaky.failing = False
    again = await result(call, "_cleveragents/plan/execute", plan_id=plan_id)
    assert again["state"] == "completed"
    diff = await result(call, "_cleveragents/plan/diff", plan_id=plan_id)
    assert "+aa\n" in diff["diff"] and "aaaa" not in diff["diff"]  # the first step did not run twice
    tree = await result(call, "_cleveragents/plan/tree", plan_id=plan_id)
    assert [(d["tool"], d["outcome"]) for d in tree["decisions"]] == [
        ("fs.replace", "succeeded"), ("test.flaky", "superseded"), ("test.flaky", "succeeded")]
    assert tree["decisions"][2]["parent_id"] == tree["decisions"][0]["decision_id"]


async def test_an_apply_refused_midway_leaves_the_plan_failed_not_stuck(backend, tmp_path):
    call, _, _, workspace = backend
    (workspace / "sub").mkdir()
    (workspace / "sub" / "f.txt").write_text("foo\n")
    plan_id = (await result(call, "_cleveragents/plan/use", action_name="replace", automation_profile="autonomous",
                            arguments={"pattern": "foo", "replacement": "bar", "glob": "sub/*.txt"}))["plan_id"]
    await result(call, "_cleveragents/plan/execute", plan_id=plan_id)
    elsewhere = tmp_path / "elsewhere"
    os.rename(workspace / "sub", elsewhere)
    (workspace / "sub").symlink_to(elsewhere, target_is_directory=True)
    refused = await error(call, "_cleveragents/plan/apply", plan_id=plan_id)
    assert refused["code"] == -32003
    status = await result(call, "_cleveragents/plan/status", plan_id=plan_id)
    assert (status["phase"], status["state"]) == ("apply", "failed")
    assert status["allowed_actions"] == ["apply", "cancel"]
    assert (elsewhere / "f.txt").read_text() == "foo\n"


async def test_a_gate_is_answered_only_by_a_plain_yes_or_no(backend):
    call, _, _, workspace = backend
    (workspace / "a.py").write_text("x = foo\n")
    plan = await result(call, "_cleveragents/plan/use", action_name="replace",
                        arguments={"pattern": "foo", "replacement": "bar", "glob": "*.py"})
    await result(call, "_cleveragents/plan/execute", plan_id=plan["plan_id"])
    for number, unclear in enumerate(("Don't apply this yet", "wait", "what does this change?")):
        answer = await result(call, "message/send", message={
            "role": "user", "messageId": f"m-{number}", "parts": [{"kind": "text", "text": unclear}],
            "contextId": plan["context_id"]})
        assert answer["status"]["state"] == "input-required", unclear
        assert "approve" in answer["status"]["message"]["parts"][0]["text"]
        assert answer["history"][0]["parts"][0]["text"] == unclear
    assert (workspace / "a.py").read_text() == "x = foo\n"
    approved = await result(call, "SendMessage", message={
        "role": "ROLE_USER", "messageId": "m-yes", "parts": [{"data": {"approve": True}}], "contextId": plan["context_id"]})
    assert approved["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (workspace / "a.py").read_text() == "x = bar\n"


async def test_a_plans_task_can_be_read_and_cancelled_as_a_task(backend):
    call, _, _, workspace = backend
    plan = await result(call, "_cleveragents/plan/use", action_name="replace", automation_profile="manual",
                        arguments={"pattern": "foo", "replacement": "bar"})
    got = await result(call, "tasks/get", id=plan["plan_id"])
    assert got["id"] == plan["plan_id"] and got["status"]["state"] == "input-required"
    cancelled = await result(call, "CancelTask", id=plan["plan_id"])
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    assert (await result(call, "_cleveragents/plan/status", plan_id=plan["plan_id"]))["state"] == "cancelled"


@pytest.mark.parametrize("cursor", ["9" * 30, "²", "-1", "1.5"])
async def test_bad_cursors_are_invalid_params(backend, cursor):
    call = backend[0]
    assert (await error(call, "_cleveragents/plan/list", cursor=cursor))["code"] == -32602
    assert (await error(call, "session.list", cursor=cursor))["code"] == -32602
    assert (await error(call, "ListTasks", pageToken=cursor))["code"] == -32602


async def test_a_state_dir_inside_the_workspace_is_protected_whatever_its_name(workspace):
    container = Container(Settings(workspace=workspace, state_dir=workspace / "state"))
    facade = A2ALocalFacade(container)

    async def call(method: str, **params: Any) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).to_wire()

    try:
        patch = "--- /dev/null\n+++ b/state/journal/evil.json\n@@ -0,0 +1 @@\n+{}\n"
        plan_id = (await result(call, "_cleveragents/plan/use", action_name="apply-patch",
                                arguments={"patch": patch}, automation_profile="autonomous"))["plan_id"]
        refused = await error(call, "_cleveragents/plan/execute", plan_id=plan_id)
        assert refused["code"] == -32003 and refused["data"]["reason"] == "protected"
        assert not (workspace / "state" / "journal" / "evil.json").exists()
    finally:
        await container.aclose()
