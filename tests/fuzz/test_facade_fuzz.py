"""The JSON-RPC envelope and every method's params, fuzzed through the in-process
facade over a real container (in-memory store, a workspace in a tmp dir).

Whatever arrives, the answer is one JSON-RPC response with a result or an error,
never an exception, and never -32603: bad input is the caller's mistake, and an
internal error would be a bug in the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleveragents.a2a import methods
from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from tests.fuzz.strategies import SCALE, json_values, params_for

CALL_TIMEOUT = 10.0
FIXTURE_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
ALL_METHODS = sorted(methods.METHODS)


class Harness:
    """One container and facade on one event loop, reused by every example (tasks
    that requests start go on running between examples, as they would in a server)."""

    def __init__(self, workspace):
        self.loop = asyncio.new_event_loop()
        self.container = Container(Settings(workspace=workspace, memory=True))
        self.facade = A2ALocalFacade(self.container)
        self.run(self.container.start())

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, CALL_TIMEOUT))

    def raw(self, body: bytes | str) -> dict[str, Any] | None:
        return self.run(self.facade.handle_raw(body))

    def call(self, method: str, params: Any, msg_id: Any = 1) -> dict[str, Any]:
        answer = self.raw(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        assert answer is not None
        return answer

    def close(self) -> None:
        self.run(self.container.aclose())
        self.facade.close()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("fuzz-workspace")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def foo():\n    return 'foo'\n")
    harness = Harness(workspace)
    yield harness
    harness.close()


def assert_response(answer: Any, msg_id: Any = None) -> None:
    assert isinstance(answer, dict), answer
    assert answer["jsonrpc"] == "2.0" and "id" in answer, answer
    if msg_id is not None:
        assert answer["id"] == msg_id, answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error["code"], int) and isinstance(error["message"], str) and error["message"]
        assert error["code"] != -32603, answer
    json.dumps(answer, allow_nan=False)  # it can go on the wire as it is


@pytest.fixture
def no_internal_errors(caplog):
    """An internal error is logged even when its payload is mapped: none may be."""
    with caplog.at_level(logging.ERROR):
        yield
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR and "internal error" in r.getMessage()]
    assert not bugs, [r.getMessage() for r in bugs]


# -- every method, arbitrary params ------------------------------------------------------
@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_method_answers_arbitrary_params(harness, method, no_internal_errors):
    @settings(max_examples=6 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
    @given(params=params_for(methods.METHODS[method]))
    def check(params):
        assert_response(harness.call(method, params, msg_id=7), 7)

    check()


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
@given(params=st.sampled_from(ALL_METHODS).flatmap(
    lambda name: st.tuples(st.just(name), json_values | st.lists(json_values, max_size=3))))
def test_params_of_any_json_type(harness, params):
    method, value = params
    answer = harness.raw(json.dumps({"jsonrpc": "2.0", "id": "x", "method": method, "params": value}))
    assert_response(answer, "x")


# -- the envelope --------------------------------------------------------------------------
_request = {"jsonrpc": "2.0", "id": 3, "method": "session.list", "params": {}}
_text = json.dumps(_request)

envelope_texts = st.one_of(
    st.text(max_size=80),
    # a good request, cut short or with junk spliced in
    st.integers(0, len(_text) - 1).map(lambda n: _text[:n]),
    st.tuples(st.integers(0, len(_text)), st.text(min_size=1, max_size=8)).map(lambda p: _text[:p[0]] + p[1] + _text[p[0]:]),
    # shapes JSON allows that JSON-RPC does not, or that stress the decoder
    st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 3000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
    st.integers(4000, 6000).map(lambda n: '{"jsonrpc":"2.0","id":' + "9" * n + ',"method":"session.list"}'),
    st.integers(4000, 6000).map(lambda n: '{"jsonrpc":"2.0","id":1,"method":"session.list","params":{"x":' + "1" * n + "}}"),
    st.sampled_from([
        '{"jsonrpc":"2.0","id":1,"method":"session.list","params":{"x":"\\ud800"}}',
        '{"jsonrpc":"2.0","id":1,"method":"session.list","params":{"x":NaN}}',
        '{"jsonrpc":"2.0","id":1,"method":"session.list","params":{"x":1e999}}',
        '{"jsonrpc":"2.0","id":1,"id":2,"method":"session.list"}',
        '{"jsonrpc":"2.0","id":1.5,"method":"session.list"}',
        '{"jsonrpc":"2.0","id":1,"method":"session.list","params":null}',
        '{"jsonrpc":"2.0","id":1,"method":" "}', '[]', '[{"jsonrpc":"2.0","id":1,"method":"session.list"}]',
        '{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', "\ufeff" + _text, _text + "\x00",
    ]),
)


@settings(max_examples=120 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
@given(text=envelope_texts, as_bytes=st.booleans())
def test_any_envelope_text_gets_a_response_or_none(harness, text, as_bytes):
    answer = harness.raw(text.encode("utf-8", "surrogatepass") if as_bytes else text)
    if answer is not None:
        assert_response(answer)


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
@given(body=st.binary(max_size=64).map(lambda junk: _text.encode()[:20] + junk))
def test_bad_utf8_is_a_parse_error(harness, body):
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        answer = harness.raw(body)
        assert_response(answer)
        assert answer["error"]["code"] == -32700 and answer["id"] is None
