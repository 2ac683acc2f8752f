"""Every method LSP defines, with arbitrary params, sent as a request and as a
notification, to one real stdio server after ``initialize``.

pygls handles some of these itself (``initialized``, ``$/setTrace``,
``$/cancelRequest``, ``workspace/didChange*``, ``window/workDoneProgress/cancel``);
the rest are unknown to the backend. Whatever comes: each request gets exactly one
well-formed response (an LSP notification sent with an id is refused with -32600,
not left unanswered), a probe request after each case is answered, the server exits
cleanly at the end, and stderr holds no traceback.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from tests.fuzz.stdio_client import StdioServer, frame
from tests.fuzz.strategies import SCALE

# The lifecycle methods end or restart the session; the framing tests cover them.
LIFECYCLE = {"initialize", "shutdown", "exit"}
LSP_METHODS = sorted(set(types.METHOD_TO_TYPES) - LIFECYCLE)
NOTIFICATIONS = {method for method in LSP_METHODS if types.METHOD_TO_TYPES[method][1] is None}
PROBE = "_cleveragents/health/check"
_ids = itertools.count(1_000)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
# Keys LSP params use, so the structures get past their first field now and then.
LSP_KEYS = ["textDocument", "uri", "position", "line", "character", "token", "value", "id", "settings",
            "event", "added", "removed", "changes", "contentChanges", "version", "text", "languageId", "files"]
lsp_shaped = st.dictionaries(st.sampled_from(LSP_KEYS), json_values, max_size=5)
params_values = st.one_of(st.none(), lsp_shaped, json_values)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = StdioServer("--workspace", str(tmp_path_factory.mktemp("ws")))
    server.send(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"processId": None, "capabilities": {}}})
                + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    server.until({0})
    yield server
    code, stderr = server.finish()
    server.kill()
    assert code == 0 and "Traceback" not in stderr, stderr[-3000:]


def message(method: str, params: Any, msg_id: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        out["id"] = msg_id
    if params is not None:
        out["params"] = params
    return out


@settings(max_examples=300 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(LSP_METHODS), params=params_values, as_request=st.booleans())
def test_any_lsp_method_with_any_params_is_answered_or_ignored(server, method, params, as_request):
    msg_id = next(_ids) if as_request else None
    probe = next(_ids)
    server.send(frame(message(method, params, msg_id)) + frame(message(PROBE, {}, probe)))
    seen = server.until({probe} | ({msg_id} if msg_id is not None else set()))
    responses = [m for m in seen if "method" not in m]
    structured = params is None or isinstance(params, (dict, list))
    # JSON-RPC: params that are neither an object nor an array make an invalid Request,
    # answered with a null id when no id is there to answer.
    expected = {probe} | ({msg_id} if msg_id is not None else set() if structured else {None})
    assert sorted(map(str, (m["id"] for m in responses))) == sorted(map(str, expected)), seen
    assert next(m for m in responses if m["id"] == probe)["result"]["status"] == "ok"
    for answer in responses:
        assert ("result" in answer) != ("error" in answer), answer
        if "error" in answer:
            assert isinstance(answer["error"]["code"], int) and answer["error"]["message"], answer
    if msg_id is not None and method in NOTIFICATIONS:
        answer = next(m for m in responses if m["id"] == msg_id)
        assert answer["error"]["code"] == -32600, answer
        if structured:
            assert answer["error"]["data"] == {"method": method, "reason": "notification_with_id"}, answer
    if not structured:
        assert next(m for m in responses if m["id"] == (msg_id if msg_id is not None else None))["error"]["code"] == -32600


def test_initialized_sent_as_a_request_is_refused_not_left_waiting(server):
    server.send(frame(message("initialized", {}, 7)))
    [answer] = server.until({7})
    assert answer["error"]["code"] == -32600 and "notification" in answer["error"]["message"], answer
