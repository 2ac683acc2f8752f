"""Every example request of docs/protocol.md, sent to a real stdio server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cleveragents.a2a import dialects, methods
from tests.conftest import REPO
from tests.e2e.rawclient import RawServer

INVALID_PARAMS = -32602


def protocol_examples() -> list[dict[str, Any]]:
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]


@pytest.fixture
async def ready(workspace):
    srv = await RawServer.start_initialized("--workspace", str(workspace), "--memory")
    yield srv
    await srv.kill()


async def test_every_protocol_example_is_a_valid_request(ready):
    examples = protocol_examples()
    # One example per method; a 0.3 name shares its 1.0 method's.
    assert {e["method"] for e in examples} == {
        s.name for s in methods.METHODS.values() if s.dialect != dialects.A2A_V03}
    wrong = {}
    for number, example in enumerate(examples, start=1):
        response = await ready.request(number, example["method"], example["params"])
        if response.get("error", {}).get("code") == INVALID_PARAMS:
            wrong[example["method"]] = response["error"]
    assert not wrong, f"docs/protocol.md examples refused as invalid params: {wrong}"

