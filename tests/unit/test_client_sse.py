"""The SSE reader of the outbound client and the model actor (the WHATWG event-stream
rules)."""

import pytest

from cleveragents.domain.event_stream import SseParser, SseTooLargeError, parse_sse, sse_lines


def events(lines, parser=None):
    parser = parser or SseParser()
    return [e for e in (parser.feed(line) for line in lines) if e is not None]


def test_data_lines_join_and_a_blank_line_ends_the_event():
    got = events(["data: {\"a\":", "data: 1}", "", "data:x", ""])
    assert [e.data for e in got] == ['{"a":\n1}', "x"]
    assert all(e.event == "message" for e in got)


def test_event_id_and_retry_fields():
    parser = SseParser()
    got = events(["event: task/statusUpdate", "id: 01J", "retry: 1500", "data: {}", "", "data: 2", ""], parser)
    assert (got[0].event, got[0].id, got[0].retry) == ("task/statusUpdate", "01J", 1500)
    # The id carries over to later events; the event name and retry do not.
    assert (got[1].event, got[1].id, got[1].retry) == ("message", "01J", None)
    assert parser.last_event_id == "01J"


def test_comments_unknown_fields_and_empty_events_are_ignored():
    assert events([": ping", "", "foo: bar", "", "event: x", ""]) == []


def test_only_one_leading_space_is_stripped_and_crlf_is_tolerated():
    assert events(["data:  two spaces\r", "\r"])[0].data == " two spaces"


def test_an_unterminated_event_is_dropped_at_the_end():
    parser = SseParser()
    assert events(["data: half"], parser) == []
    parser.close()
    assert parser.feed("") is None


def test_a_runaway_event_is_refused():
    parser = SseParser(max_chars=10)
    with pytest.raises(SseTooLargeError):
        events(["data: 123456", "data: 7890123"], parser)


async def chunks_of(*chunks: bytes):
    for chunk in chunks:
        yield chunk


async def test_parse_sse_reads_bytes_and_every_line_ending():
    got = [e.data async for e in parse_sse(chunks_of(b"data: 1\n\ndata: 2\rdata: 3\r\rdata: 4\r\n\r\n"))]
    assert got == ["1", "2\n3", "4"]


@pytest.mark.parametrize("cut", range(1, 24))
async def test_a_line_ending_or_a_character_cut_between_chunks(cut):
    """CRLF split over two chunks is one line ending, and a character split over two
    chunks is one character."""
    stream = "data: é€1\r\n\r\ndata: 2\r\n\r\n".encode()
    got = [e.data async for e in parse_sse(chunks_of(stream[:cut], stream[cut:]))]
    assert got == ["é€1", "2"]


async def test_only_cr_and_lf_end_lines():
    """JSON may hold U+2028 and its kin unescaped: they are text, not line endings."""
    data = '{"text": "a\u2028b\u2029c\x85d\x1ce\x0bf\x0cg"}'
    got = [e.data async for e in parse_sse(chunks_of(f"data: {data}\n\n".encode()))]
    assert got == [data]


async def test_a_leading_bom_is_dropped_and_bad_utf8_is_replaced():
    got = [e.data async for e in parse_sse(chunks_of(b"\xef\xbb\xbfdata: a\xffb\n\n"))]
    assert got == ["a\ufffdb"]


async def test_a_line_that_never_ends_is_refused_at_the_limit():
    read = []

    async def endless():
        yield b"data: "
        while True:
            read.append(1)
            yield b"a" * 1000

    with pytest.raises(SseTooLargeError, match="an SSE line exceeds 10000 characters"):
        async for _ in sse_lines(endless(), 10_000):
            pass
    assert len(read) == 10  # no chunk read past the one that crossed the limit


async def test_a_last_line_without_an_ending_is_a_line():
    assert [line async for line in sse_lines(chunks_of(b"one\ntwo"))] == ["one", "two"]
    assert [line async for line in sse_lines(chunks_of(b"one\n"))] == ["one"]
