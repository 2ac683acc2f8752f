"""Every contract case, through the in-process facade and through a real stdio server."""

from __future__ import annotations

import pytest

from tests.contract import plan_cases, task_cases  # noqa: F401  (they register their cases)
from tests.contract.cases import CASES
from tests.contract.runners import FacadeRunner, StdioRunner


@pytest.fixture(params=["facade", "stdio"])
async def runner(request, workspace):
    runner = FacadeRunner(workspace) if request.param == "facade" else StdioRunner(workspace)
    await runner.start()
    yield runner
    await runner.close()


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
async def test_contract(case, runner):
    await case(runner)
