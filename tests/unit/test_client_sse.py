"""The SSE parser of the outbound client (the WHATWG event-stream rules)."""

import pytest

from cleveragents.a2a.sse_parse import SseParser, SseTooLargeError, parse_sse


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


async def test_parse_sse_reads_an_async_line_source():
    async def lines():
        for line in ["data: 1", "", "data: 2\rdata: 3", ""]:  # a bare CR ends a line too
            yield line

    got = [e.data async for e in parse_sse(lines())]
    assert got == ["1", "2\n3"]
