"""Tool calls run off the event loop, in a pool of lower CPU priority, each within its
time limit (infra.tools.runner, ToolContext.deadline); what an actor gets back is
bounded."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from cleveragents.config import Settings
from cleveragents.domain.errors import BudgetExceededError
from cleveragents.domain.tools import ToolContext, ToolResult, ToolTimeoutError
from cleveragents.infra.actors.toolbox import MAX_RESULT_CHARS, ToolBox, bounded
from cleveragents.infra.config_file import USER_CONFIG_ENV, ConfigError, load_config, workspace_config_path
from cleveragents.infra.tools import runner as runner_module
from cleveragents.infra.tools.patch import PatchApplyTool
from cleveragents.infra.tools.runner import ToolRunner
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.overlay import Overlay


class Probe:
    """A tool that reports where it ran, and waits as told: checking its deadline or not."""

    name = "probe.run"
    description = "test"
    namespace = "probe"

    def __init__(self, seconds: float = 0.0, cooperative: bool = True):
        self.seconds, self.cooperative = seconds, cooperative

    def input_schema(self):
        return {}

    def validate(self, arguments):
        return dict(arguments)

    def run(self, arguments, context: ToolContext) -> ToolResult:
        ends = time.monotonic() + self.seconds
        while time.monotonic() < ends:
            if self.cooperative:
                context.check_cancelled()
            time.sleep(0.01)
        return ToolResult(output={"thread": threading.current_thread().name, "loop_thread": threading.main_thread().name,
                                  "nice": os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
                                  "deadline": context.deadline, "text": "x" * 100_000})


def _context() -> ToolContext:
    return ToolContext(view=None, workspace=".")  # type: ignore[arg-type]


async def test_a_call_runs_in_the_pool_at_a_lower_priority():
    runner = ToolRunner(30.0)
    try:
        result = await runner.call(Probe(), {}, _context())
    finally:
        runner.close()
    assert result.output["thread"].startswith("tool") and result.output["thread"] != result.output["loop_thread"]
    if sys.platform.startswith("linux"):
        assert result.output["nice"] >= os.getpriority(os.PRIO_PROCESS, 0) + 1
    assert result.output["deadline"] is not None


async def test_a_tool_that_checks_its_deadline_stops_with_the_limit_named():
    runner = ToolRunner(0.2)
    started = time.monotonic()
    try:
        with pytest.raises(ToolTimeoutError) as caught:
            await runner.call(Probe(seconds=30), {}, _context())
    finally:
        runner.close()
    assert time.monotonic() - started < 5
    assert isinstance(caught.value, BudgetExceededError)
    assert caught.value.data == {"limit": "tool_timeout", "seconds": 0.2, "tool": "probe.run"}
    assert "tool_timeout" in caught.value.message and "0.2 s" in caught.value.message


async def test_a_tool_that_never_looks_is_given_up_on_after_the_grace(monkeypatch):
    monkeypatch.setattr(runner_module, "GRACE", 0.2)
    runner = ToolRunner(0.1)
    started = time.monotonic()
    try:
        with pytest.raises(ToolTimeoutError):
            await runner.call(Probe(seconds=1.5, cooperative=False), {}, _context())
    finally:
        runner.close()
    assert time.monotonic() - started < 1.2, "the call did not wait for the thread"


async def test_a_call_given_up_on_while_queued_never_starts(monkeypatch):
    monkeypatch.setattr(runner_module, "GRACE", 0.1)
    runner = ToolRunner(0.1, max_workers=1)
    started: list[str] = []

    class Recording(Probe):
        def run(self, arguments, context):
            started.append(arguments["name"])
            return super().run(arguments, context)

    try:
        calls = [runner.call(Recording(seconds=0.8, cooperative=False), {"name": "first"}, _context()),
                 runner.call(Recording(), {"name": "queued"}, _context())]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        await asyncio.sleep(1.0)  # the first thread ends; the queued call must not run then
    finally:
        runner.close()
    assert all(isinstance(outcome, ToolTimeoutError) for outcome in outcomes)
    assert started == ["first"]


async def test_a_nested_call_keeps_the_sooner_deadline():
    context = _context()
    context.start_clock(0.5, "outer")
    outer = context.deadline
    runner = ToolRunner(60.0)
    try:
        result = await runner.call(Probe(), {}, context)
    finally:
        runner.close()
    assert result.output["deadline"] == outer


async def test_the_toolbox_gives_an_actor_a_bounded_result():
    runner = ToolRunner(30.0)
    toolbox = ToolBox(lambda: [Probe()], {"probe.run"}, runner)
    try:
        answer = await toolbox.invoker(_context)("probe.run", {})
    finally:
        runner.close()
    assert len(answer["text"]) < MAX_RESULT_CHARS + 100 and answer["text"].endswith("more characters)")


def test_bounded_cuts_text_and_lists_once_the_budget_is_spent():
    value = {"results": [{"path": "a", "text": "x" * 30} for _ in range(100)], "truncated": False}
    cut = bounded(value, 100)
    assert cut["truncated"] is False
    assert cut["results"][-1].endswith("more items)") and len(cut["results"]) < 10
    assert bounded("y" * 10, 4) == "yyyy... (6 more characters)"
    assert bounded(value, 10**6) == value


def test_a_patch_over_many_equal_lines_stops_at_the_deadline(tmp_path: Path):
    # Each place the hunk's first line matches costs a comparison of the whole hunk.
    (tmp_path / "same.txt").write_text("a\n" * 200_000)
    hunk = "".join(" a\n" for _ in range(20_000)) + "-b\n"
    patch = f"--- a/same.txt\n+++ b/same.txt\n@@ -1,20001 +1,20000 @@\n{hunk}"
    context = ToolContext(view=Overlay(tmp_path, BlobStore(tmp_path / "blobs")), workspace=str(tmp_path))
    context.start_clock(0.3, "patch.apply")
    started = time.monotonic()
    with pytest.raises(ToolTimeoutError):
        PatchApplyTool().run({"patch": patch}, context)
    assert time.monotonic() - started < 5


def test_tool_timeout_comes_from_the_environment_and_the_file(tmp_path, monkeypatch):
    assert Settings().tool_timeout == 300.0
    monkeypatch.setenv("CLEVERAGENTS_TOOL_TIMEOUT", "12.5")
    assert Settings.from_env().tool_timeout == 12.5
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv("CLEVERAGENTS_TOOL_TIMEOUT", bad)
        with pytest.raises(ValueError, match="CLEVERAGENTS_TOOL_TIMEOUT"):
            Settings.from_env()
    monkeypatch.delenv("CLEVERAGENTS_TOOL_TIMEOUT")
    path = workspace_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    environ = {USER_CONFIG_ENV: str(tmp_path / "none.toml")}
    path.write_text("[defaults]\ntool_timeout = 45\n")
    assert load_config(tmp_path, ["local"], environ).defaults["tool_timeout"] == 45
    path.write_text("[defaults]\ntool_timeout = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, ["local"], environ)
    assert caught.value.data["key"] == "defaults.tool_timeout" and "more than 0" in caught.value.message


def test_the_event_loop_is_not_where_a_tool_runs():
    async def main() -> str:
        runner = ToolRunner(5.0)
        try:
            return (await runner.call(Probe(), {}, _context())).output["thread"]
        finally:
            runner.close()

    assert asyncio.run(main()) != threading.current_thread().name
