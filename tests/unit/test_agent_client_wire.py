"""The ACP transport's line reader and its diff rendering, on real asyncio streams."""

from __future__ import annotations

import asyncio

from cleveragents.transports.agent_client.diffs import _patched
from cleveragents.transports.agent_client.wire import AgentClientError, LineReader
from cleveragents.transports.lsp import sniff


def reader_of(*pieces: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=64)  # small, so long lines come in pieces
    for piece in pieces:
        reader.feed_data(piece)
    reader.feed_eof()
    return reader


async def read_all(lines: LineReader) -> list[bytes | AgentClientError]:
    out: list[bytes | AgentClientError] = []
    while (line := await lines.next()) is not None:
        out.append(line)
    return out


async def test_the_head_comes_first_and_lines_keep_their_bytes():
    lines = LineReader(reader_of(b'"a":1}\n{"b":2}\n{"c":3}'), b"\n {", 1000)
    assert await read_all(lines) == [b"", b' {"a":1}', b'{"b":2}', b'{"c":3}']  # a last line without \n counts


async def test_a_line_over_the_limit_is_refused_and_the_next_is_read():
    long = b"{" + b"x" * 500 + b"}\n"
    out = await read_all(LineReader(reader_of(long, b'{"ok":1}\n'), b"", 100))
    assert isinstance(out[0], AgentClientError) and out[0].code == -32600
    assert out[0].data == {"size": len(long), "max_message_size": 100}
    assert out[1:] == [b'{"ok":1}']


async def test_a_line_just_at_the_limit_is_taken():
    body = b"{" + b"x" * 98 + b"}"
    assert await read_all(LineReader(reader_of(body + b"\n"), b"", 100)) == [body]


async def test_sniff_reads_only_up_to_the_deciding_byte():
    reader = reader_of(b"  \r\nContent-Length: 2\r\n\r\n{}")
    assert await sniff.detect(reader) == ("lsp", b"  \r\nC")
    assert await reader.read() == b"ontent-Length: 2\r\n\r\n{}"
    assert await sniff.detect(reader_of(b"\t{")) == ("acp", b"\t{")
    assert await sniff.detect(reader_of(b" \n")) == (None, b" \n")  # end of input decides nothing


def test_hunks_rebuild_the_new_text():
    hunk = {"old_start": 2, "old_lines": 1, "lines": ["-b", "+B", "+B2"]}
    assert _patched("a\nb\nc\n", [hunk]) == "a\nB\nB2\nc\n"
    assert _patched("a\n", [{"old_start": 0, "old_lines": 0, "lines": ["+z"]}]) == "z\na\n"
    assert _patched("a\nb\n", [{"old_start": 1, "old_lines": 1, "lines": ["-x"]}]) is None  # doesn't fit
