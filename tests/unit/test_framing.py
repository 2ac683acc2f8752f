"""The frame reader: exact for good input, and it ends without raising on any input."""

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from cleveragents.transports.lsp import framing
from cleveragents.transports.lsp.framing import FrameError, FrameReader, read_frames


def run(data: bytes, max_size: int = 1 << 20) -> tuple[list[bytes], list[FrameError]]:
    async def go():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        bodies, errors = [], []
        await asyncio.wait_for(read_frames(FrameReader(reader, max_size), bodies.append, errors.append), 5)
        return bodies, errors

    return asyncio.run(go())


def frame(body: bytes, extra: bytes = b"") -> bytes:
    return b"Content-Length: %d\r\n%s\r\n" % (len(body), extra) + body


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=8), st.booleans())
def test_good_frames_arrive_exactly(bodies, with_content_type):
    extra = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" if with_content_type else b""
    got, errors = run(b"".join(frame(b, extra) for b in bodies))
    assert got == [b for b in bodies] and errors == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_end_cleanly(data):
    run(data, max_size=256)


def test_oversized_frames_are_skipped_and_reading_goes_on():
    got, errors = run(frame(b"x" * 1000) + frame(b"ok"), max_size=100)
    assert got == [b"ok"]
    assert [e.code for e in errors] == [-32600] and errors[0].data == {"size": 1000, "max_message_size": 100}


def test_header_lines_may_end_in_bare_newlines():
    got, _ = run(b"Content-Length: 2\n\n{}")
    assert got == [b"{}"]


# -- the recovery rule (transports/lsp/framing.py) -----------------------------------------
def test_after_a_refused_header_block_the_reader_goes_on_at_the_next_content_length():
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "x"}'
    for bad in (b"Content-Length: abc\r\n\r\n", b"Content-Length: 2.0\r\n\r\n", b"Content-Type: x\r\n\r\n",
                b"Content-Length: 99999999999\r\n\r\n", "Content-Type: caf\u00e9\r\n\r\n".encode()):
        got, errors = run(bad + body + frame(b"one") + frame(b"two"))
        assert got == [b"one", b"two"] and len(errors) == 1, (bad, got, errors)


def test_different_lengths_are_refused_and_the_same_one_twice_is_one_length():
    got, errors = run(b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}" + frame(b"next"))
    assert got == [b"next"]
    assert errors[0].data == {"reason": "conflicting Content-Length headers", "values": ["2", "3"]}
    got, errors = run(b"Content-Length: 2\r\ncontent-length: 02\r\n\r\n{}")
    assert got == [b"{}"] and errors == []


def test_a_body_holding_the_next_header_had_a_length_too_large():
    got, errors = run(b"Content-Length: 40\r\n\r\n{}" + frame(b"next") + frame(b"last"))
    assert got == [b"next", b"last"]
    assert errors[0].data == {"reason": "Content-Length is larger than the body", "content_length": 40,
                              "received": 2}


def test_bytes_before_a_header_are_answered_and_the_frame_after_them_is_read():
    got, errors = run(b'{"no": "header"}' + frame(b"next"))
    assert got == [b"next"] and errors[0].data == {"reason": "bytes that are not part of a frame", "size": 16}


async def test_a_body_may_come_in_pieces_and_a_stall_is_reported(caplog, monkeypatch):
    monkeypatch.setattr(framing, "BODY_STALL_SECONDS", 0.05)
    reader = asyncio.StreamReader()
    reading = asyncio.ensure_future(FrameReader(reader).next())
    reader.feed_data(b"Content-Length: 10\r\n\r\n")
    await asyncio.sleep(0.2)  # nothing of the body: one line says what the reader waits for
    reader.feed_data(b'{"a"')
    await asyncio.sleep(0.2)  # part of it, not yet JSON: the same
    reader.feed_data(b": 123}")
    assert await asyncio.wait_for(reading, 5) == b'{"a": 123}'
    waiting = [r.getMessage() for r in caplog.records if "waiting for the rest of a frame" in r.getMessage()]
    assert [w.split(":")[2].split(" bytes")[0].strip() for w in waiting] == ["0 of 10", "4 of 10"], waiting


async def test_a_whole_json_body_that_stops_short_is_answered(monkeypatch):
    monkeypatch.setattr(framing, "BODY_STALL_SECONDS", 0.05)
    reader = asyncio.StreamReader()
    frames = FrameReader(reader)
    reader.feed_data(b"Content-Length: 100\r\n\r\n{}")
    error = await asyncio.wait_for(frames.next(), 5)
    assert error.data == {"reason": "Content-Length is larger than the body", "content_length": 100, "received": 2}
    reader.feed_data(b"    " + frame(b"next"))
    assert await asyncio.wait_for(frames.next(), 5) == b"next"


async def test_skipped_bytes_are_answered_when_the_input_pauses(monkeypatch):
    """After a refused frame the reader skips to the next Content-Length; a client that
    sent a message with no length and waits still gets an answer."""
    monkeypatch.setattr(framing, "BODY_STALL_SECONDS", 0.05)
    reader = asyncio.StreamReader()
    frames = FrameReader(reader)
    reader.feed_data(b"Content-Type: x\r\n\r\n")
    assert (await asyncio.wait_for(frames.next(), 5)).data == {"reason": "missing Content-Length header"}
    reader.feed_data(b"X-Other: 1\r\n\r\n")
    assert (await asyncio.wait_for(frames.next(), 5)).data == {"reason": "bytes that are not part of a frame",
                                                               "size": 12}
    reader.feed_data(frame(b"next"))
    assert await asyncio.wait_for(frames.next(), 5) == b"next"
