"""A minimal HTTP/1.1 keep-alive client on asyncio streams, for bench_http.py.

httpx costs about a millisecond of client CPU per request on this kind of machine:
driven by it, a server answering in 0.3 ms and one answering in 0.6 ms look alike,
and in a profile our server sat idle for over half of a sequential run. This client
writes a request and parses the response (Content-Length or chunked) and nothing
more, so the figures are the servers' own, as bench_stdio's small framer is for stdio.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str):
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, url: str) -> Connection:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer, parts.netloc)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()

    def _send(self, path: str, body: bytes, headers: dict[str, str]) -> None:
        head = [f"POST {path} HTTP/1.1", f"Host: {self.host}", f"Content-Length: {len(body)}",
                *(f"{k}: {v}" for k, v in headers.items())]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    async def _head(self) -> tuple[int, dict[str, str]]:
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        return status, headers

    async def _chunks(self, headers: dict[str, str]) -> AsyncIterator[bytes]:
        if "content-length" in headers:
            yield await self.reader.readexactly(int(headers["content-length"]))
            return
        assert headers.get("transfer-encoding") == "chunked", headers
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            data = await self.reader.readexactly(size + 2)  # the chunk and its CRLF
            if size == 0:
                return
            yield data[:-2]

    async def post_json(self, path: str, payload: Any, headers: dict[str, str]) -> Any:
        self._send(path, json.dumps(payload).encode(), headers)
        status, response_headers = await self._head()
        body = b"".join([chunk async for chunk in self._chunks(response_headers)])
        assert status == 200, (status, body)
        return json.loads(body)

    async def post_stream(self, path: str, payload: Any, headers: dict[str, str]) -> AsyncIterator[bytes]:
        """The response body's chunks as they arrive (read to the end, keeping the
        connection usable)."""
        self._send(path, json.dumps(payload).encode(), headers)
        status, response_headers = await self._head()
        assert status == 200, status
        async for chunk in self._chunks(response_headers):
            yield chunk
