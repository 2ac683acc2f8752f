"""A peer's body read up to a limit."""

from __future__ import annotations

from cleveragents.domain.bounded_read import read_up_to


async def chunks(*pieces: bytes):
    for piece in pieces:
        yield piece


async def test_a_body_at_the_limit_is_whole_and_one_byte_more_is_cut_at_it():
    assert await read_up_to(chunks(b"abc", b"def"), 6) == (b"abcdef", False)
    assert await read_up_to(chunks(b"abc", b"defg"), 6) == (b"abcdef", True)
    assert await read_up_to(chunks(), 6) == (b"", False)


async def test_reading_stops_at_the_first_chunk_past_the_limit():
    read = []

    async def endless():
        while True:
            read.append(1)
            yield b"x" * 10

    assert await read_up_to(endless(), 25) == (b"x" * 25, True)
    assert len(read) == 3
