"""The event stream response (``transports/http/sse.py``) on real uvicorn: the first
event ahead of the rest, heartbeats on an idle stream, and the iterator closed and
``on_close`` run once however the response ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from cleveragents.transports.http.sse import EventStreamResponse, ServerSentEvent, sse_event
from tests.contract.runners import UvicornServer


class Stream:
    """One stream's events and what became of it."""

    def __init__(self, events: list[Any], then_wait: bool = False):
        self.events, self.then_wait = events, then_wait
        self.closed = asyncio.Event()
        self.closes = 0
        self.finished = False

    async def items(self) -> AsyncIterator[ServerSentEvent]:
        try:
            for i, data in enumerate(self.events):
                yield sse_event(data, event="update", id=str(i))
            if self.then_wait:
                await asyncio.sleep(3600)
        finally:
            self.finished = True

    async def on_close(self) -> None:
        self.closes += 1
        self.closed.set()


def app_of(stream: Stream, heartbeat: float = 15.0) -> Starlette:
    async def endpoint(request: Any) -> EventStreamResponse:
        return EventStreamResponse(stream.items(), first=sse_event({"first": True}), heartbeat=heartbeat,
                                   on_close=stream.on_close, headers={"X-Extra": "yes"})
    return Starlette(routes=[Route("/s", endpoint, methods=["GET", "HEAD"])])


async def test_the_first_event_then_the_rest_then_the_end():
    stream = Stream([{"n": 1}, "plain\ntext"])
    async with UvicornServer(app_of(stream)) as url, httpx.AsyncClient() as client:
        response = await client.get(f"{url}/s")
    assert response.headers["content-type"].startswith("text/event-stream")
    assert (response.headers["cache-control"], response.headers["x-accel-buffering"]) == ("no-cache", "no")
    assert response.headers["x-extra"] == "yes"
    assert response.text == ('data: {"first":true}\n\n'
                             'id: 0\nevent: update\ndata: {"n":1}\n\n'
                             "id: 1\nevent: update\ndata: plain\ndata: text\n\n")
    await asyncio.wait_for(stream.closed.wait(), 5)
    assert stream.finished and stream.closes == 1


async def test_an_idle_stream_sends_heartbeats():
    stream = Stream([], then_wait=True)
    async with UvicornServer(app_of(stream, heartbeat=0.05)) as url, httpx.AsyncClient() as client:
        async with client.stream("GET", f"{url}/s") as response:
            lines = response.aiter_lines()
            assert await anext(lines) == 'data: {"first":true}'
            seen = [await asyncio.wait_for(anext(lines), 5) for _ in range(4)]
    assert seen.count(": keep-alive") == 2, seen


async def test_a_client_going_away_closes_the_stream_at_once():
    stream = Stream([{"n": 1}], then_wait=True)
    async with UvicornServer(app_of(stream)) as url, httpx.AsyncClient() as client:
        async with client.stream("GET", f"{url}/s") as response:
            async for line in response.aiter_lines():
                if line.startswith("id: 0"):
                    break
        await asyncio.wait_for(stream.closed.wait(), 5)  # not at the next heartbeat, 15 s on
    assert stream.finished and stream.closes == 1


async def test_head_opens_no_stream_and_still_closes():
    stream = Stream([{"n": 1}], then_wait=True)
    async with UvicornServer(app_of(stream)) as url, httpx.AsyncClient() as client:
        response = await asyncio.wait_for(client.head(f"{url}/s"), 5)
        await asyncio.wait_for(stream.closed.wait(), 5)
    assert response.status_code == 200 and response.content == b""
    assert stream.closes == 1
