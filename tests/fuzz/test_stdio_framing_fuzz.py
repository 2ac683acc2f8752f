"""LSP framing fuzzed through the real stdio server process.

Generated runs of bad frames (bad or huge Content-Length, truncated bodies, bad
UTF-8, headers without a body, junk headers) go to one server; after each run a good
request must be answered, every bad frame must have had exactly the error it
deserves, and stdout must carry nothing but frames. After a refused header block the
reader skips to the next ``Content-Length:`` (``transports/lsp/framing.py``): the
expected answers of a run follow that rule. Framing errors come before LSP's
lifecycle: a bad frame gets the same answer before ``initialize`` as after it.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleveragents.transports.lsp.framing import DEFAULT_MAX_MESSAGE_SIZE
from tests.fuzz.stdio_client import StdioServer, frame, handshake
from tests.fuzz.strategies import SCALE

MAX = 4096  # the server under test runs with --max-message-size 4096
FIXTURE_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
_ids = itertools.count(10**8)  # ids of one width: a case's size must not depend on when it runs
latin1_line = st.characters(min_codepoint=0, max_codepoint=255, blacklist_characters="\r\n")


@dataclass
class Case:
    data: bytes
    errors: list[int] = field(default_factory=list)  # the error codes it must get, in order
    ids: set[int] = field(default_factory=set)  # requests that must get a result
    size_error: int | None = None  # the size a "too large" error must report
    known: bool = True  # False: random bytes, whose answers (if any) are only checked for form
    resyncs: bool = False  # a refused header block: the reader then skips to the next Content-Length


def request(msg_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "session.list"}).encode()


def valid_length(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 18


@st.composite
def bad_length(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(["Content-Length", "content-length", "CONTENT-LENGTH"]))
    value = draw(st.text(latin1_line, max_size=24).filter(lambda v: not valid_length(v.strip()))
                 | st.integers(10**18, 10**60).map(str)
                 | st.sampled_from(["-5", "+5", "0x10", "1e3", "5.0", "\xb2", "\xb9\xb3", " ", "12 34", "1_000"]))
    end = draw(st.sampled_from(["\r\n", "\n"]))
    return Case(f"{name}: {value}{end}{end}".encode("latin-1"), errors=[-32700], resyncs=True)


@st.composite
def too_large(draw: st.DrawFn) -> Case:
    size = draw(st.integers(MAX + 1, 3 * MAX))
    unit = draw(st.binary(min_size=1, max_size=16))
    return Case(frame((unit * (size // len(unit) + 1))[:size]), errors=[-32600], size_error=size, resyncs=True)


@st.composite
def near_the_limit(draw: st.DrawFn) -> Case:
    """A good request padded with spaces to a size around the limit."""
    msg_id = next(_ids)
    body = request(msg_id)
    size = draw(st.integers(MAX - 40, MAX + 40))
    padded = body + b" " * (size - len(body))
    if size <= MAX:
        return Case(frame(padded), ids={msg_id})
    return Case(frame(padded), errors=[-32600], size_error=size, resyncs=True)


@st.composite
def truncated_body(draw: st.DrawFn) -> Case:
    """A body cut short and filled up to its announced length with junk."""
    body = request(next(_ids))
    keep = draw(st.integers(0, len(body) - 1))
    fill = draw(st.sampled_from([b" ", b"\x00", b"{", b"\xff", b"\n"]))
    return Case(frame(body[:keep] + fill * (len(body) - keep)), errors=[-32700])


@st.composite
def bad_utf8(draw: st.DrawFn) -> Case:
    bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80", b"\x80"]))
    body = b'{"jsonrpc": "2.0", "id": %d, "method": "session.list", "params": {"x": "a%sb"}}' % (next(_ids), bad)
    return Case(frame(body), errors=[-32700])


@st.composite
def headers_without_body(draw: st.DrawFn) -> Case:
    header = draw(st.sampled_from([b"Content-Length: 0\r\n\r\n", b"Content-Type: application/json\r\n\r\n",
                                   b"X-Junk: 1\r\nContent-Type: text/plain\r\n\r\n", b"Content-Length:\r\n\r\n"]))
    return Case(header, errors=[-32700], resyncs=header != b"Content-Length: 0\r\n\r\n")


# RFC 7230 token characters (a header's name) and printable ASCII (its value).
token_chars = st.sampled_from("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
ascii_value = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)


@st.composite
def junk_headers(draw: st.DrawFn) -> Case:
    """A good frame with header lines that have no colon, or a name that is no token,
    or a value that is not printable ASCII: refused, and its body skipped."""
    msg_id = next(_ids)
    no_colon = st.text(latin1_line.filter(lambda c: c != ":"), min_size=1, max_size=40)
    not_a_token = st.text(latin1_line.filter(lambda c: c != ":"), min_size=1, max_size=12).filter(
        lambda name: not name.isascii() or not all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in name)
    ).map(lambda name: f"{name}: 1")
    not_ascii = st.text(latin1_line, min_size=1, max_size=20).filter(lambda v: not v.isascii()).map(lambda v: f"X-Note: {v}")
    junk = draw(st.lists(no_colon | not_a_token | not_ascii, min_size=1, max_size=3).filter(
        lambda lines: not any("content-length:" in line.lower() for line in lines)))
    lines = [f"Content-Length: {len(request(msg_id))}", *junk]
    order = draw(st.permutations(lines))
    return Case(("\r\n".join(order) + "\r\n\r\n").encode("latin-1") + request(msg_id), errors=[-32700],
                resyncs=True)


@st.composite
def extra_headers(draw: st.DrawFn) -> Case:
    """Headers the server doesn't know are ignored: the request is served."""
    msg_id = next(_ids)
    names = st.text(token_chars, min_size=1, max_size=12).filter(lambda n: n.lower() != "content-length")
    extra = draw(st.lists(st.tuples(names, ascii_value), max_size=4))
    lines = [f"Content-Length: {len(request(msg_id))}", *(f"{n}:{v}" for n, v in extra)]
    return Case(("\r\n".join(draw(st.permutations(lines))) + "\r\n\r\n").encode("latin-1") + request(msg_id),
                ids={msg_id})


@st.composite
def too_many_headers(draw: st.DrawFn) -> Case:
    msg_id = next(_ids)
    count = draw(st.integers(33, 60))
    lines = [f"Content-Length: {len(request(msg_id))}", *(f"X-{n}: {n}" for n in range(count))]
    return Case(("\r\n".join(lines) + "\r\n\r\n").encode() + request(msg_id), errors=[-32700], resyncs=True)


@st.composite
def random_body(draw: st.DrawFn) -> Case:
    return Case(frame(draw(st.binary(max_size=200))), known=False)


blank_lines = st.sampled_from([b"\r\n", b"\n", b"\r\n\r\n"]).map(lambda data: Case(data))
cases = st.one_of(bad_length(), too_large(), near_the_limit(), truncated_body(), bad_utf8(), headers_without_body(),
                  junk_headers(), extra_headers(), too_many_headers(), random_body(), blank_lines)


def assert_well_formed(message: dict) -> None:
    assert message.get("jsonrpc") == "2.0" and "id" in message, message
    assert ("result" in message) != ("error" in message), message
    if "error" in message:
        assert isinstance(message["error"]["code"], int) and message["error"]["message"], message
        assert message["error"]["code"] != -32603, message


def as_read(run: list[Case]) -> list[Case] | None:
    """The cases the reader reads as they were sent: after a refused header block it
    skips to the next ``Content-Length:``, so a case with none is skipped whole (a run
    is sent at once: no pause gets the skipped bytes an answer). ``None`` when that
    header is in the middle of a case (what follows depends on its bytes)."""
    read, lost = [], False
    for case in run:
        if lost:
            start = case.data.lower().find(b"content-length:")
            if start < 0:
                continue
            if start > 0:
                return None
        read.append(case)
        lost = case.resyncs
    return read


def run_cases(server: StdioServer, run: list[Case], initialized: bool = True) -> None:
    """Send ``run`` and a probe, and check the answers. On a server not ``initialized``
    yet the probe is ``initialize``, and the run's good requests get -32002 instead
    of a result."""
    probe = next(_ids)
    server.send(b"".join(case.data for case in run) + (frame(request(probe)) if initialized else handshake(probe)))
    read = as_read(run)
    wanted = set().union(*(case.ids for case in read or ())) | {probe}
    seen = server.until(wanted)
    for message in seen:
        assert_well_formed(message)
    assert "result" in seen[-1] or any(m.get("id") == probe and "result" in m for m in seen)
    if read is not None and all(case.known for case in read):
        early = [] if initialized else [-32002]
        errors = [m["error"] for m in seen if "error" in m]
        assert [e["code"] for e in errors] == [code for case in read for code in case.errors + early * len(case.ids)], \
            (run, seen)
        assert all(m["id"] is None for m in seen if "error" in m and m["error"]["code"] != -32002)
        assert all(m["id"] in wanted and m["error"]["data"] == {"method": "session.list", "reason": "not_initialized"}
                   for m in seen if "error" in m and m["error"]["code"] == -32002)
        sizes = [e["data"]["size"] for e in errors if e["code"] == -32600]
        assert sizes == [case.size_error for case in read if case.size_error is not None]
        for error in errors:
            if error["code"] == -32600:
                assert error["message"] == "Invalid request: message too large"
                assert error["data"]["max_message_size"] == MAX


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = StdioServer("--workspace", str(tmp_path_factory.mktemp("ws")), "--max-message-size", str(MAX))
    server.initialize()
    yield server
    code, stderr = server.finish()
    server.kill()
    assert code == 0 and "Traceback" not in stderr, stderr[-3000:]


@settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
@given(run=st.lists(cases, min_size=1, max_size=5))
def test_bad_frames_get_their_errors_and_the_server_keeps_serving(server, run):
    run_cases(server, run)


@settings(max_examples=4 * SCALE, deadline=None, suppress_health_check=FIXTURE_OK, database=None)
@given(first=cases, cut=st.integers(1, 200), tail=st.sampled_from(["header", "body"]))
def test_a_bad_first_frame_then_input_that_ends_mid_frame(tmp_path_factory, first, cut, tail):
    """The first frame is read before the server proper starts (the early answer to
    ``initialize``): it gets the same treatment, and ``initialize`` still works after
    it. Input that then ends inside a frame ends the server cleanly, after answering
    what came before."""
    server = StdioServer("--workspace", str(tmp_path_factory.mktemp("ws")), "--max-message-size", str(MAX))
    try:
        run_cases(server, [first], initialized=False)
        whole = frame(request(1)) if tail == "body" else b"Content-Length: 40\r\nContent-Type: x\r\n"
        server.send(frame(request(7)) + whole[:min(cut, len(whole) - 1)])
        assert "result" in server.until({7})[-1]
        code, stderr = server.finish()
        assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
    finally:
        server.kill()


def test_a_header_line_longer_than_the_read_buffer(server):
    server.send(b"X-Long: " + b"a" * (3 << 20) + b"\r\n\r\n")
    probe = next(_ids)
    server.send(frame(request(probe)))
    seen = server.until({probe})
    assert [m["error"]["code"] for m in seen if "error" in m] == [-32700]


def test_the_default_limit_is_sixteen_mebibytes(tmp_path):
    server = StdioServer("--workspace", str(tmp_path))
    try:
        size = DEFAULT_MAX_MESSAGE_SIZE + 1
        server.send(b"Content-Length: %d\r\n\r\n" % size)
        chunk = b" " * (1 << 20)
        for start in range(0, size, len(chunk)):
            server.send(chunk[: size - start])
        error = server.next_message()["error"]
        assert error == {"code": -32600, "message": "Invalid request: message too large",
                         "data": {"size": size, "max_message_size": DEFAULT_MAX_MESSAGE_SIZE}}
        server.initialize()
        server.send(frame(request(1)))
        assert "result" in server.until({1})[-1]
    finally:
        server.kill()


def test_memory_stays_bounded_over_two_thousand_bad_frames(tmp_path):
    server = StdioServer("--workspace", str(tmp_path), "--max-message-size", str(MAX))
    bad = [b"Content-Length: x\r\n\r\n", frame(b"\xff" * 100), frame(b"{" * 500), frame(b"z" * (MAX + 100)),
           b"junk\r\nContent-Length: 2\r\n\r\n{}", frame(b'{"jsonrpc": "2.0", "id": [1], "method": "x"}')]
    try:
        server.initialize()

        def burst(count: int) -> None:
            probe = next(_ids)
            server.send(b"".join(bad[n % len(bad)] for n in range(count)) + frame(request(probe)))
            seen = server.until({probe})
            assert len(seen) == count + 1

        burst(300)  # warm up: the services, the allocator's pools
        before = server.rss_kib()
        for _ in range(4):
            burst(500)
        growth = server.rss_kib() - before
        assert growth < 20 * 1024, f"RSS grew by {growth} KiB over 2,000 bad frames"
        code, stderr = server.finish()
        assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
    finally:
        server.kill()


# -- regressions: each of these once stopped the server ------------------------------
@pytest.mark.parametrize(("data", "code", "words"), [
    (b"Content-Length: \xb2\r\n\r\n", -32700, "invalid Content-Length"),  # isdigit() but not int()
    (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", -32700, "invalid Content-Length"),
    (frame(b'{"jsonrpc": "2.0", "id": 1, "method": "session.list", "params": {"n": ' + b"1" * 5000 + b"}}"),
     -32700, "too many digits"),  # past int()'s digit limit, json.loads raises a plain ValueError
], ids=["superscript digit", "long length", "long number"])
def test_inputs_that_once_crashed_the_server(tmp_path, data, code, words):
    """Each, as the first frame and as a later one, once ended the server with a traceback."""
    server = StdioServer("--workspace", str(tmp_path))
    try:
        for probe, follow in ((2, handshake(2)), (3, frame(request(3)))):  # the first round initializes
            server.send(data + follow)
            seen = server.until({probe})
            assert "result" in seen[-1], seen
            assert [(m["error"]["code"], words in m["error"]["message"]) for m in seen if "error" in m] == [(code, True)]
        exit_code, stderr = server.finish()
        assert exit_code == 0 and "Traceback" not in stderr, stderr[-3000:]
    finally:
        server.kill()


def test_a_junk_header_line_skips_its_body(server):
    """Once the body was read as the next frame's headers, which lost the frame after it."""
    body = request(next(_ids))
    probe = next(_ids)
    server.send(b"no colon here\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body) + frame(request(probe)))
    seen = server.until({probe})
    assert [m["error"]["code"] for m in seen if "error" in m] == [-32700] and len(seen) == 2



def test_lsp_params_of_the_wrong_shape_are_one_warning_line(tmp_path):
    """pygls logged a whole traceback at ERROR for each such message (bad input, not a bug)."""
    server = StdioServer("--workspace", str(tmp_path))
    try:
        server.initialize()
        server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": [1]}})
                    + frame({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover", "params": {"textDocument": []}})
                    + frame(request(6)))
        seen = server.until({5, 6})
        assert [m["error"]["code"] for m in seen if "error" in m] == [-32602]
        code, stderr = server.finish()
        assert code == 0 and "Traceback" not in stderr and " ERROR " not in stderr, stderr[-3000:]
        assert stderr.count("invalid params for") == 2
    finally:
        server.kill()
