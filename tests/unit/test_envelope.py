"""``envelope.decode`` takes JSON (RFC 8259) and nothing Python's parser adds to it:
every transport decodes through it, so a value the client sent can't change on the way
(``NaN`` stored as ``null``) or mean two things (a name given twice)."""

import pytest

from cleveragents.a2a import envelope
from cleveragents.a2a.errors import ParseError

REQUEST = '{"jsonrpc": "2.0", "id": 1, "method": "session.create", "params": {"metadata": %s}}'


@pytest.mark.parametrize(("value", "data"), [
    ("NaN", {"reason": "non-standard number", "literal": "NaN"}),
    ("Infinity", {"reason": "non-standard number", "literal": "Infinity"}),
    ("[-Infinity]", {"reason": "non-standard number", "literal": "-Infinity"}),
    ('{"a": 1e999}', {"reason": "number out of range", "number": "1e999"}),
    ('{"a": -1E400}', {"reason": "number out of range", "number": "-1E400"}),
    ('{"a": 1, "a": 2}', {"reason": "duplicate name", "name": "a"}),
    ('{"b": {"x": [], "x": []}}', {"reason": "duplicate name", "name": "x"}),
    ('{"\\ud800": 1, "\\ud800": 2}', {"reason": "duplicate name", "name": "\\ud800"}),
    ("[" * 100_000 + "]" * 100_000, {"reason": "nested too deeply"}),
    ('{"a": 1' + "0" * 5000 + "}", {"reason": "number too long"}),
], ids=["NaN", "Infinity", "-Infinity", "overflow", "negative overflow", "name twice", "nested name twice",
        "surrogate name twice", "nested past the parser", "digits past the parser"])
def test_what_json_does_not_allow_is_a_parse_error(value, data):
    with pytest.raises(ParseError) as refused:
        envelope.decode(REQUEST % value)
    assert refused.value.data == data
    assert refused.value.message.startswith("Parse error: ")
    refused.value.message.encode("utf-8")  # no lone surrogate in the text an answer carries


def test_the_same_name_at_two_places_and_ordinary_numbers_are_fine():
    message = envelope.decode(REQUEST % '{"a": {"id": 1.5e300, "n": -0}, "b": {"id": 1e-400}}')
    assert message["id"] == 1 and message["params"]["metadata"]["a"] == {"id": 1.5e300, "n": 0}
    assert message["params"]["metadata"]["b"]["id"] == 0.0  # underflow is a number, just a small one


@pytest.mark.parametrize(("body", "kind"), [
    ('{"jsonrpc": "2.0", "id": 7, "method": "session.list", "params": null}', "request"),
    ('{"jsonrpc": "2.0", "method": "exit"}', "notification"),
    ('{"jsonrpc": "2.0", "id": 7, "result": null}', "response"),
])
def test_read_classifies_a_message(body, kind):
    incoming = envelope.read(body.encode())
    assert (incoming.kind, incoming.refusal) == (kind, None)
    assert "params" not in incoming.message  # null params are no params


@pytest.mark.parametrize(("body", "msg_id", "code"), [
    (b"\xff{}", None, -32700),
    (b'{"jsonrpc": "2.0", "id": 7, "method": ', None, -32700),
    (b'{"jsonrpc": "1.0", "id": 7, "method": "session.list"}', 7, -32600),
    (b'[{"jsonrpc": "2.0", "id": 7, "method": "session.list"}]', None, -32600),
    (b'{"jsonrpc": "2.0", "id": true, "method": "session.list"}', None, -32600),
], ids=["not UTF-8", "not JSON", "wrong version", "batch", "bad id"])
def test_read_refuses_what_is_no_message_with_the_response_to_send(body, msg_id, code):
    incoming = envelope.read(body)
    assert incoming.kind is None
    assert incoming.refusal is not None
    assert (incoming.refusal["jsonrpc"], incoming.refusal["id"]) == ("2.0", msg_id)
    assert incoming.refusal["error"]["code"] == code
