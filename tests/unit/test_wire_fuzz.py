"""Property tests: whatever arrives, the facade answers with one well-formed
JSON-RPC message (or nothing, for a notification) and never raises."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleveragents.a2a import methods
from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
method_names = st.sampled_from(sorted(methods.METHODS)) | st.text(max_size=30)
messages = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0]) | json_values,
        "id": st.integers() | st.text(max_size=10) | json_values,
        "method": method_names | json_values,
        "params": st.dictionaries(st.text(max_size=12), json_values, max_size=5) | json_values,
    },
)


@pytest.fixture(scope="module")
def facade():
    container = Container(Settings(memory=True))
    facade = A2ALocalFacade(container)
    yield facade
    facade.close()
    container.close()


def check_answer(answer, message):
    if answer is None:
        assert isinstance(message, dict) and "method" in message and "id" not in message
        return
    assert answer["jsonrpc"] == "2.0"
    assert ("result" in answer) != ("error" in answer)
    if "error" in answer:
        assert isinstance(answer["error"]["code"], int) and answer["error"]["message"]
        assert answer["error"]["code"] != -32603, answer  # bad input is never a bug
    json.dumps(answer)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=messages)
def test_any_message_gets_one_well_formed_answer(facade, message):
    check_answer(asyncio.run(facade.handle_raw(json.dumps(message).encode())), message)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=200))
def test_any_bytes_get_an_answer(facade, body):
    answer = asyncio.run(facade.handle_raw(body))
    if answer is not None:
        check_answer(answer, None)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(methods.METHODS)),
       params=st.dictionaries(st.text(max_size=12), json_values, max_size=5))
def test_every_method_survives_arbitrary_params(facade, name, params):
    response = asyncio.run(facade.handle_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": name, "params": params})))
    check_answer(response, None)
