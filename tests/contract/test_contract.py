"""Every contract case, through the in-process facade, a real stdio server and the HTTP app on uvicorn."""

from __future__ import annotations

import pytest

from tests.contract import plan_cases, task_cases  # noqa: F401  (they register their cases)
from tests.contract.cases import CASES
from tests.contract.runners import FacadeRunner, HttpRunner, StdioRunner

RUNNERS = {"facade": FacadeRunner, "stdio": StdioRunner, "http": HttpRunner}


@pytest.fixture(params=list(RUNNERS))
async def runner(request, workspace):
    runner = RUNNERS[request.param](workspace)
    await runner.start()
    yield runner
    await runner.close()


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
async def test_contract(case, runner):
    await case(runner)
