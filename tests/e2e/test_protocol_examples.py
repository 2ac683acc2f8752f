"""Every example request of docs/protocol.md, and every method the server advertises,
sent to a real stdio server."""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from typing import Any

import pytest

from cleveragents.a2a import dialects, methods
from tests.conftest import REPO
from tests.e2e.rawclient import RawServer

INVALID_PARAMS = -32602
NOT_SERVED = -32004


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


async def test_every_advertised_method_is_served(workspace):
    server = await RawServer.start("--workspace", str(workspace), "--memory")
    try:
        answer = await server.initialize()
        a2a = answer["result"]["capabilities"]["experimental"]["a2a"]
        advertised = {name for names in a2a["methods"].values() for name in names}
        (extension,) = a2a["agentCard"]["capabilities"]["extensions"]
        globs = extension["params"]["methods"]  # a glob per family, each matching served methods
        assert all(any(fnmatchcase(name, glob) for name in advertised) for glob in globs)
        assert all(any(fnmatchcase(name, glob) for glob in globs) for name in a2a["methods"]["extension"])
        card = (await server.request(1, "GetExtendedAgentCard", {}))["result"]
        for ext in card["capabilities"]["extensions"]:
            assert ext.get("params", {}).get("methods", []) == globs
            listed = ext.get("params", {}).get("methodNames", {})
            assert {name for names in listed.values() for name in names} == advertised
        unserved = {}
        for number, name in enumerate(sorted(advertised), start=2):
            spec = methods.METHODS[name]
            error = (await server.request(number, name, spec.example)).get("error", {})
            if error.get("code") in (NOT_SERVED, -32601) and "service" in error.get("data", {}):
                unserved[name] = error
        assert not unserved, f"advertised but not served: {unserved}"
    finally:
        await server.kill()
