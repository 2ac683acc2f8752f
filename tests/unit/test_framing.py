"""The frame reader: exact for good input, and it ends without raising on any input."""

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from cleveragents.transports.lsp.framing import FrameError, read_frames


def run(data: bytes, max_size: int = 1 << 20) -> tuple[list[bytes], list[FrameError]]:
    async def go():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        bodies, errors = [], []
        await asyncio.wait_for(read_frames(reader, bodies.append, errors.append, max_size), 5)
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
