"""A child's stderr relayed to ours, line by line with its name, from a real child."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys

from cleveragents.transports.child_stderr import MAX_LINE, child_stderr

# Two lines, then a line longer than MAX_LINE with no end yet, then it waits for stdin.
SCRIPT = rf"""
import sys
sys.stderr.write("first\nsecond\n" + "x" * {MAX_LINE + 1000})
sys.stderr.flush()
sys.stdin.read()
sys.stderr.write(" and its end\nlast, with no end")
"""


async def _until(condition, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the relay did not write it in time")


async def test_lines_are_relayed_named_and_a_long_one_is_not_held_until_it_ends(monkeypatch):
    ours = io.StringIO()
    monkeypatch.setattr(sys, "stderr", ours)
    errlog = await child_stderr("mcp calc")
    try:
        child = await asyncio.create_subprocess_exec(sys.executable, "-c", SCRIPT, stdin=subprocess.PIPE,
                                                     stderr=errlog)
    finally:
        errlog.close()  # the child has its copy
    assert child.stdin is not None
    # Past MAX_LINE, the line with no end is written while the child still runs, not
    # kept until it ends.
    await _until(lambda: ours.getvalue().count("x") > MAX_LINE)
    child.stdin.close()
    assert await child.wait() == 0
    await _until(lambda: ours.getvalue().endswith("last, with no end\n"))  # at the pipe's end, what is left
    lines = ours.getvalue().splitlines()
    assert all(line.startswith("mcp calc: ") for line in lines), lines
    said = [line.removeprefix("mcp calc: ") for line in lines]
    assert said[:2] == ["first", "second"] and said[-1] == "last, with no end"
    assert "".join(said[2:-1]) == "x" * (MAX_LINE + 1000) + " and its end"  # in pieces as they came
