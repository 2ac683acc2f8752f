"""Malformed input to the stdio server, as an attacker (or a broken client) sends it.

Each test drives a real server process, started as root and as an unprivileged user
(the ``identity`` fixture), with a real workspace and SQLite store, and reads its raw
stdout. What every answer must respect:

- no traceback and no absolute path (the server's source, the workspace, the
  interpreter's prefix, ``/home``, ``/root``, ``/tmp``) in an error or a notification;
- bad input is the client's mistake: never -32603, and no traceback on stderr;
- a bad frame is answered (id null) and the next frame is read: the server never
  stalls without a word.

The same wrong-typed values go through the HTTP binding (JSON-RPC, REST, SSE) and the
in-process facade at the end of the file.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cleveragents
from cleveragents.a2a import methods
from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app
from tests.conftest import REPO
from tests.contract.runners import UvicornServer
from tests.fuzz.stdio_client import StdioServer, frame
from tests.fuzz.strategies import SCALE, json_values
from tests.http_answers import jsonrpc_answer
from tests.security.identities import Identity

SOURCE = Path(cleveragents.__file__).resolve().parent.parent
BUGGY_SERVER = Path(__file__).resolve().parent / "lsp_server_with_a_bug.py"
PRIVATE = "/srv/cleveragents-private"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
# Wrong-typed values as they come off the wire (JSON text, so NaN and friends can be sent).
WRONG_TYPED = ["{}", "[1]", "[]", "1.5", "true", "false", '{"a": [1]}', str(2**70)]
WRONG_VERSIONS = ["1.0", "true", "false", "1", "0", "[1]", '["1.0"]', "{}", str(2**70), '"1.\\u00b2"', '"' + "1" * 5000 + '"']
_ids = itertools.count(1)


def forbidden(*paths: Path | str) -> list[str]:
    return ["Traceback", 'File "', str(SOURCE), str(REPO), sys.prefix, sys.base_prefix, "/home/", "/root/", "/tmp/",
            *map(str, paths)]


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def assert_clean(messages: list[dict[str, Any]], bad: list[str]) -> None:
    """No error and no notification carries a forbidden string; no message at all
    carries a traceback. (Results may name the workspace: the editor asked for it.)"""
    for message in messages:
        checked = message.get("error") if "error" in message else message if "method" in message else None
        for text in strings(checked) + strings(message.get("result")):
            for word in bad if checked is not None else bad[:2]:
                assert word not in text, f"{word!r} reached the client: {json.dumps(message)[:400]}"


def assert_well_formed(message: dict[str, Any]) -> None:
    assert message.get("jsonrpc") == "2.0", message
    if "method" in message:
        return
    assert "id" in message and ("result" in message) != ("error" in message), message
    if "error" in message:
        error = message["error"]
        assert isinstance(error["code"], int) and isinstance(error["message"], str) and error["message"], message
        assert error["code"] != -32603, message


class Client:
    """A server process started as ``identity``, its answers and its stderr."""

    def __init__(self, identity: Identity, *args: str, script: Path | None = None, initialize: bool = True):
        self.workspace = identity.directory(f"ws-{next(_ids)}")
        (self.workspace / "README.md").write_text("hello\n")
        identity.own(self.workspace)
        command = [*identity.python, str(script)] if script else identity.server_command()
        self.server = StdioServer("--workspace", str(self.workspace), *args, command=command, memory=False,
                                  cwd=self.workspace, **identity.popen_options())
        self.bad = forbidden(self.workspace, identity.base, PRIVATE)
        self.seen: list[dict[str, Any]] = []
        if initialize:
            self.send(frame({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                             "params": {"processId": None, "capabilities": {}}}))
            assert "result" in self.until("init")[-1]
            self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def send(self, data: bytes) -> None:
        self.server.send(data)

    def until(self, *ids: Any) -> list[dict[str, Any]]:
        messages = self.server.until(set(ids))
        self.seen += messages
        return messages

    def call(self, method: str, params: Any = None, *, raw_params: str | None = None) -> dict[str, Any]:
        msg_id = f"c{next(_ids)}"
        self.send(frame(request_text(msg_id, method, params, raw_params).encode()))
        return self.until(msg_id)[-1]

    def exchange(self, data: bytes) -> list[dict[str, Any]]:
        """Send ``data`` then a probe; every message that came before the probe's answer."""
        probe = f"probe{next(_ids)}"
        self.send(data + frame({"jsonrpc": "2.0", "id": probe, "method": "_cleveragents/health/check"}))
        messages = self.until(probe)
        assert "result" in messages[-1], messages[-1]
        return messages[:-1]

    def finish(self) -> str:
        """End input, expect a clean exit; stderr. Every answer is checked for leaks."""
        try:
            code, stderr = self.server.finish()
        finally:
            self.server.kill()
        assert code == 0, stderr[-3000:]
        assert_clean(self.seen, self.bad)
        return stderr

    def close(self) -> None:
        self.server.kill()


def request_text(msg_id: Any, method: str, params: Any = None, raw_params: str | None = None) -> str:
    text = '{"jsonrpc": "2.0", "id": %s, "method": %s' % (json.dumps(msg_id), json.dumps(method))
    if raw_params is not None:
        return text + ', "params": ' + raw_params + "}"
    return text + ("}" if params is None else ', "params": ' + json.dumps(params) + "}")


def with_key(params: dict[str, Any], key: str, raw_value: str) -> str:
    """``params`` as JSON text with ``key`` set to the raw JSON text ``raw_value``."""
    inner = json.dumps({k: v for k, v in params.items() if k != key})[1:-1]
    return "{" + inner + (", " if inner else "") + json.dumps(key) + ": " + raw_value + "}"


# -- a wrong-typed workDoneToken is -32602 -------------------------------------------------
def test_a_wrong_typed_work_done_token_is_invalid_params_with_its_location(identity):
    client = Client(identity)
    try:
        for raw in WRONG_TYPED:
            health = client.call("_cleveragents/health/check", raw_params=with_key({}, "workDoneToken", raw))
            assert health["error"]["code"] == -32602, (raw, health)
            assert [e["loc"] for e in health["error"]["data"]["errors"]] == [["workDoneToken"]], health
            listed = client.call("ListTasks", raw_params=with_key({"pageSize": 5}, "workDoneToken", raw))
            assert listed["error"]["code"] == -32602, (raw, listed)
            violations = [d for d in listed["error"]["data"] if d["@type"] == BAD_REQUEST][0]["fieldViolations"]
            assert [v["field"] for v in violations] == ["workDoneToken"], listed
            legacy = client.call("tasks/list", raw_params=with_key({}, "workDoneToken", raw))
            assert legacy["error"]["code"] == -32602 and legacy["error"]["data"]["errors"][0]["loc"] == ["workDoneToken"]
        for token in ("progress-1", 7, None):
            assert "result" in client.call("_cleveragents/health/check", {"workDoneToken": token})
        # A cancel for a token of the wrong type is the client's mistake too: nothing breaks.
        for raw in WRONG_TYPED:
            body = '{"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel", "params": {"token": %s}}' % raw
            assert client.exchange(frame(body.encode())) == []
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr and " ERROR " not in stderr, stderr[-3000:]


# -- a bug reaches the client as an error id only; the traceback goes to stderr -------------
def test_an_unexpected_error_gives_the_client_an_error_id_and_stderr_the_traceback(identity):
    """A bug stays a -32603, but the client gets only the error id; the traceback is on
    stderr under that id: in a pygls-run request and notification, and in the facade."""
    client = Client(identity, script=BUGGY_SERVER)
    try:
        hover = client.call("textDocument/hover", {"textDocument": {"uri": "file:///x.py"},
                                                   "position": {"line": 0, "character": 0}})
        saved = client.exchange(frame({"jsonrpc": "2.0", "method": "textDocument/didSave",
                                       "params": {"textDocument": {"uri": "file:///x.py"}}}))
        # The state database overwritten under the running server (what a stray write does).
        assert "result" in client.call("session.create", {})
        state = client.workspace / ".cleveragents"
        for path in state.glob("state.db*"):
            with open(path, "r+b") as db:
                db.write(b"not a database " * 300)
        listed = client.call("session.list", {})
        tasks = client.call("ListTasks", {})
    finally:
        stderr = client.finish()
    assert hover["error"]["code"] == -32603 and hover["error"]["message"] == "Internal error"
    assert set(hover["error"]["data"]) == {"error_id"}, hover
    assert [m["method"] for m in saved] == ["window/showMessage"]
    assert listed["error"]["code"] == -32603 and set(listed["error"]["data"]) == {"error_id"}, listed
    assert tasks["error"]["code"] == -32603
    assert [d["metadata"] for d in tasks["error"]["data"]] == [{"error_id": tasks["error"]["data"][0]["metadata"]["error_id"]}]
    notified = re.search(r"error id (\w+)", saved[0]["params"]["message"])
    assert notified, saved
    for error_id in (hover["error"]["data"]["error_id"], notified.group(1), listed["error"]["data"]["error_id"]):
        logged = stderr[stderr.index(error_id):]
        assert logged.splitlines()[1].startswith("Traceback"), logged[:500]
    assert PRIVATE in stderr, "the detail is the server owner's to read"


# -- a wrong-typed version gets the version error -------------------------------------------
def test_a_wrong_typed_version_gets_the_version_error(identity):
    client = Client(identity)
    try:
        for raw in WRONG_VERSIONS:
            sent = json.loads(raw)
            ext = client.call("_cleveragents/health/check", raw_params=with_key({}, "A2A-Version", raw))
            assert ext["error"]["code"] == -32007 and ext["error"]["data"]["requested"] == sent, ext
            v1 = client.call("ListTasks", raw_params=with_key({}, "A2A-Version", raw))
            info = v1["error"]["data"][0]
            assert v1["error"]["code"] == -32009 and info["@type"] == ERROR_INFO, v1
            assert info["reason"] == "VERSION_NOT_SUPPORTED", v1
            requested = info["metadata"]["requested"]  # ErrorInfo metadata holds strings: JSON for the rest
            assert requested == sent if isinstance(sent, str) else json.loads(requested) == sent, v1
            v03 = client.call("message/send", raw_params=with_key({"message": {}}, "A2A-Version", raw))
            assert v03["error"]["code"] == -32009 and v03["error"]["data"]["requested"] == sent, v03
        assert "result" in client.call("ListTasks", {"A2A-Version": "1.0"})
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_a_wrong_typed_version_in_a_later_initialize_is_refused(identity):
    """An ``initialize`` that is not the first message takes the server proper's path:
    the same values in initializationOptions get the same error, and a refused
    ``initialize`` may be sent again."""
    client = Client(identity, initialize=False)
    try:
        early = client.call("_cleveragents/health/check")
        assert early["error"]["data"]["reason"] == "not_initialized", early
        for raw in WRONG_VERSIONS:
            params = '{"capabilities": {}, "initializationOptions": {"a2aVersion": %s}}' % raw
            answer = client.call("initialize", raw_params=params)
            assert answer["error"]["code"] == -32009, (raw, answer)
            assert answer["error"]["data"]["requested"] == json.loads(raw), answer
        assert "result" in client.call("initialize", {"capabilities": {}, "initializationOptions": {"a2aVersion": "1.0"}})
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.mark.parametrize("raw", ["1.0", "true"])
def test_a_wrong_typed_version_in_the_first_initialize_is_refused(identity, raw):
    """The first ``initialize`` is answered before the server proper loads."""
    client = Client(identity, initialize=False)
    try:
        params = '{"processId": null, "capabilities": {}, "initializationOptions": {"a2aVersion": %s}}' % raw
        answer = client.call("initialize", raw_params=params)
        assert answer["error"]["code"] == -32009 and answer["error"]["data"]["requested"] == json.loads(raw), answer
        assert "result" in client.call("initialize", {"capabilities": {}, "initializationOptions": {"a2aVersion": "1.0"}})
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


# -- after a bad header the reader finds the next frame ----------------------------------------
def _good(n: int) -> tuple[bytes, list[str]]:
    ids = [f"g{next(_ids)}" for _ in range(n)]
    return b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "_cleveragents/health/check"}) for i in ids), ids


BAD_HEADERS = {
    "letters": b"Content-Length: abc\r\n",
    "a decimal": b"Content-Length: 2.0\r\n",
    "negative": b"Content-Length: -5\r\n",
    "signed": b"Content-Length: +5\r\n",
    "exponent": b"Content-Length: 1e3\r\n",
    "two numbers": b"Content-Length: 5 5\r\n",
    "empty": b"Content-Length:\r\n",
    "missing": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
    "no colon": b"Content-Length 60\r\n",
    "junk line": b"this is not a header\r\nContent-Length: %d\r\n",
    "non-ASCII digit": "Content-Length: \u0663\r\n".encode(),
    "non-ASCII header": "Content-Type: caf\u00e9\r\nContent-Length: %d\r\n".encode(),
    "superscript": b"Content-Length: \xb2\r\n",
    "NUL in a value": b"Content-Length: 6\x000\r\n",
    "33 header lines": b"Content-Length: %d\r\n" + b"".join(b"X-%d: %d\r\n" % (n, n) for n in range(33)),
}


@pytest.mark.parametrize("with_body", [True, False], ids=["with a body", "without a body"])
def test_after_a_bad_header_the_reader_finds_the_next_frame(identity, with_body):
    client = Client(identity)
    try:
        for name, header in [*BAD_HEADERS.items(), ("absurdly large", b"Content-Length: 99999999999\r\n"),
                             ("larger than any message", b"Content-Length: 999999999999999999\r\n")]:
            lost = f"lost{next(_ids)}"
            body = request_text(lost, "session.create", {}).encode() if with_body else b""
            head = header % len(body) if b"%d" in header else header
            good, ids = _good(10)
            answers = client.exchange(head + b"\r\n" + body + good)
            errors = [m for m in answers if "error" in m]
            assert len(errors) == 1 and errors[0]["id"] is None, (name, answers)
            assert errors[0]["error"]["code"] == (-32600 if "large" in name else -32700), (name, errors)
            assert [m["id"] for m in answers if "result" in m] == ids, (name, answers)
            assert lost not in json.dumps(answers), f"{name}: the refused frame's request ran"
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_a_content_length_that_does_not_match_the_body(identity):
    """A length larger than the body swallows the next frame's header: the reader finds
    that header inside the body. A shorter one leaves the body's tail before the next
    header. Either way the frames after it are served; only a length that cuts into the
    next header (a few bytes too many) costs that next frame too."""
    client = Client(identity)
    try:
        for extra in (200, 5, -5, -30):
            body = request_text(f"odd{next(_ids)}", "session.list", {}).encode()
            good, ids = _good(10)
            answers = client.exchange(b"Content-Length: %d\r\n\r\n" % (len(body) + extra) + body + good)
            served = [m["id"] for m in answers if "result" in m]
            assert served == (ids[1:] if extra == 5 else ids), (extra, answers)
            assert {m["error"]["code"] for m in answers if "error" in m} == {-32700}, (extra, answers)
            assert all(m["id"] is None for m in answers if "error" in m)
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_a_body_that_stops_short_is_answered_or_reported(identity):
    """The client sent less than its Content-Length and waits. When what came is a whole
    JSON message, the frame is answered -32700 after a pause; otherwise one line on
    stderr says what the reader waits for. It never waits without a word."""
    client = Client(identity)
    try:
        whole = request_text("short", "session.list", {}).encode()
        client.send(b"Content-Length: %d\r\n\r\n" % (len(whole) + 500) + whole)
        error = client.server.next_message()
        assert error["id"] is None and error["error"]["code"] == -32700, error
        assert error["error"]["data"] == {"reason": "Content-Length is larger than the body",
                                          "content_length": len(whole) + 500, "received": len(whole)}, error
        assert "result" in client.call("_cleveragents/health/check")
        client.send(b"Content-Length: 500\r\n\r\n" + whole[:20])
        deadline = time.monotonic() + 10
        while "waiting for" not in client.server.stderr_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        line = [x for x in client.server.stderr_text().splitlines() if "waiting for" in x]
        assert len(line) == 1 and "20 of 500 bytes" in line[0], client.server.stderr_text()[-2000:]
        good, ids = _good(3)
        answers = client.exchange(b" " * 480 + good)  # the rest of the 500 bytes: not JSON
        assert [m["error"]["code"] for m in answers if "error" in m] == [-32700]
        assert [m["id"] for m in answers if "result" in m] == ids
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


# -- duplicate lengths ----------------------------------------------------------------------
def test_conflicting_content_length_headers_are_refused(identity):
    client = Client(identity)
    try:
        for order in ((5, None), (None, 5), (None, 0), (None, 10**6)):
            lost = f"dup{next(_ids)}"
            body = request_text(lost, "session.create", {}).encode()
            lengths = [len(body) if n is None else n for n in order]
            head = b"".join(b"Content-Length: %d\r\n" % n for n in lengths)
            good, ids = _good(3)
            answers = client.exchange(head + b"\r\n" + body + good)
            errors = [m for m in answers if "error" in m]
            assert len(errors) == 1 and errors[0]["error"]["code"] == -32700 and errors[0]["id"] is None, answers
            assert errors[0]["error"]["data"] == {"reason": "conflicting Content-Length headers",
                                                  "values": [str(n) for n in lengths]}
            assert [m["id"] for m in answers if "result" in m] == ids and lost not in json.dumps(answers)
        # The same length twice is one length: the frame is served.
        same = request_text("twice", "_cleveragents/health/check").encode()
        client.send(b"Content-Length: %d\r\ncontent-length: %d\r\n\r\n" % (len(same), len(same)) + same)
        assert "result" in client.until("twice")[-1]
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr, stderr[-3000:]


# -- the class: any malformed input, any method --------------------------------------------------
TRANSPORT_KEYS = ["workDoneToken", "partialResultToken", "A2A-Version", "_meta"]
SPECIAL = ["NaN", "Infinity", "-Infinity", "1e999", '"\\ud800"', '"x\\udfff"', str(2**64), str(-(2**70)),
           '{"a": 1, "a": 2}', "[" * 40 + "]" * 40, '"' + "x" * 3000 + '"', "-0", "1E400", '"\\u0000"']
ODD_IDS = ["1.5", "true", "false", "[]", "{}", "[1]", str(2**64), '""', "NaN", "1e999", '"\\ud800"', "null"]


def _raw(value: Any) -> str:
    return json.dumps(value)


raw_values = st.sampled_from(SPECIAL + WRONG_TYPED) | json_values.map(_raw)


@st.composite
def malformed_request(draw: st.DrawFn) -> str:
    """One JSON-RPC request (as text) with something of the wrong type or shape."""
    name = draw(st.sampled_from(sorted(methods.METHODS)))
    spec = methods.METHODS[name]
    base = dict(spec.example)
    kind = draw(st.integers(0, 4))
    msg_id = json.dumps(f"f{next(_ids)}")
    if kind == 0:  # params of the wrong shape
        params = draw(st.sampled_from(["[]", "[1]", "1", '"x"', "true", "null", "NaN"]))
    elif kind == 1:  # an odd id
        return '{"jsonrpc": "2.0", "id": %s, "method": %s, "params": %s}' % (
            draw(st.sampled_from(ODD_IDS)), json.dumps(name), json.dumps(base))
    elif kind == 2:  # an odd top-level field
        field = draw(st.sampled_from(["jsonrpc", "method", "params", "extra"]))
        fields = {"jsonrpc": '"2.0"', "id": msg_id, "method": json.dumps(name), "params": json.dumps(base)}
        fields[field] = draw(raw_values)
        return "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    else:  # one param key, a transport key or the method's own, with an odd value
        keys = TRANSPORT_KEYS if kind == 3 else sorted({*base, *TRANSPORT_KEYS})
        params = with_key(base, draw(st.sampled_from(keys)), draw(raw_values))
    return '{"jsonrpc": "2.0", "id": %s, "method": %s, "params": %s}' % (msg_id, json.dumps(name), params)


bad_header_frames = st.sampled_from(list(BAD_HEADERS.values())).flatmap(
    lambda header: malformed_request().map(
        lambda text: (header % len(text.encode()) if b"%d" in header else header) + b"\r\n" + text.encode()))
malformed_input = st.one_of(
    malformed_request().map(lambda text: frame(text.encode("utf-8", "surrogatepass"))),
    bad_header_frames,
    st.binary(max_size=64).map(lambda junk: b"Content-Length: %d\r\n\r\n" % len(junk) + junk),
)
FIXTURE_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def test_no_malformed_input_gets_an_internal_error_or_a_leak(identity):
    client = Client(identity)
    try:
        @settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
        @given(data=st.lists(malformed_input, min_size=1, max_size=3))
        def check(data):
            for message in client.exchange(b"".join(data)):
                assert_well_formed(message)
                assert_clean([message], client.bad)

        check()
    finally:
        stderr = client.finish()
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-3000:]


# -- the same values over HTTP and in process --------------------------------------------------------
async def test_http_and_the_facade_refuse_wrong_typed_transport_keys(tmp_path):
    from cleveragents.a2a.facade import A2ALocalFacade
    from cleveragents.container import Container

    workspace = tmp_path / "ws"
    workspace.mkdir()
    bad = forbidden(workspace, PRIVATE)
    server = UvicornServer(build_app(settings=Settings(workspace=workspace, memory=True)))
    await server.start()
    answers: list[dict[str, Any]] = []
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
            async def rpc(method: str, raw_params: str, **headers: str) -> dict[str, Any]:
                response = await http.post("/a2a", content=request_text(1, method, raw_params=raw_params).encode(),
                                           headers={"Content-Type": "application/json", **headers})
                answers.append(jsonrpc_answer(response))
                return answers[-1]

            for raw in WRONG_TYPED:
                for method in ("_cleveragents/health/check", "ListTasks", "SendStreamingMessage"):
                    answer = await rpc(method, with_key({}, "workDoneToken", raw), Accept="text/event-stream")
                    assert answer["error"]["code"] == -32602, answer
            for raw in WRONG_VERSIONS:
                assert (await rpc("_cleveragents/health/check", with_key({}, "A2A-Version", raw)))["error"]["code"] == -32007
                for method in ("ListTasks", "SendStreamingMessage"):
                    answer = await rpc(method, with_key({}, "A2A-Version", raw), Accept="text/event-stream")
                    assert answer["error"]["code"] == -32009, answer
                rest = await http.post("/message:send", content=with_key({"message": {}}, "A2A-Version", raw).encode(),
                                       headers={"Content-Type": "application/json"})
                assert rest.status_code == 400 and rest.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
                answers.append(rest.json())
            for header in (b"1.\xb2", b"1" * 5000, b"\xe9", b"1.0.0.0"):
                response = await http.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"},
                                           headers=[(b"A2A-Version", header)])
                answers.append(jsonrpc_answer(response))
                assert answers[-1]["error"]["code"] == -32009, answers[-1]

            @settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
            @given(text=malformed_request())
            def bodies(text):
                collected.append(text)

            collected: list[str] = []
            bodies()
            for text in collected:
                response = await http.post("/a2a", content=text.encode("utf-8", "surrogatepass"),
                                           headers={"Content-Type": "application/json"})
                assert response.status_code < 500, (text, response.text)
                if response.headers["content-type"].startswith("text/event-stream"):  # a stream that started
                    sent = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
                else:
                    sent = [response.json()]
                for message in sent:
                    assert_well_formed(message)
                answers += sent
    finally:
        await server.stop()
    assert_clean(answers, bad)

    container = Container(Settings(workspace=workspace, memory=True))
    await container.start()
    facade = A2ALocalFacade(container)
    try:
        for raw in WRONG_TYPED:
            answer = await facade.handle_raw(request_text(1, "session.list", raw_params=with_key({}, "workDoneToken", raw)))
            assert answer["error"]["code"] == -32602, answer
        for raw in WRONG_VERSIONS:
            answer = await facade.handle_raw(request_text(1, "GetTask", raw_params=with_key({"id": "x"}, "A2A-Version", raw)))
            assert answer["error"]["code"] == -32009, answer
            response = await facade.dispatch({"jsonrpc": "2.0", "id": 2, "method": "session.list",
                                              "params": {"A2A-Version": json.loads(raw)}})
            assert response.error is not None and response.error.code == -32007, response
    finally:
        await container.aclose()
        facade.close()
