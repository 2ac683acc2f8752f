"""A child process's stderr, relayed to ours through the log's queue.

A child started with our stderr writes to the client's pipe itself. A client that
never reads that pipe (the official ACP SDK's client pipes an agent's stderr and never
reads it) lets it fill, and the child then blocks on its next log line, and its
answers with it. Here the child gets a pipe of its own, read on the event loop as it
is written; each line goes to ``sys.stderr`` with the child's name in front. Once
stdout carries the protocol, ``sys.stderr`` is the log's queue (``stderr_log``):
bounded, dropped when full, never blocking.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import TextIO

MAX_LINE = 8192  # bytes of a line held until its end comes; past that, the piece is written as it is


class _Relay(asyncio.Protocol):
    def __init__(self, name: str) -> None:
        self._name = name
        self._partial = b""

    def data_received(self, data: bytes) -> None:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_LINE:
            lines.append(self._partial)
            self._partial = b""
        for line in lines:
            self._write(line)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._partial:
            self._write(self._partial)
            self._partial = b""

    def _write(self, line: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):  # our stderr is closed: nobody is left to read it
            sys.stderr.write(f"{self._name}: {line.decode('utf-8', 'replace')}\n")


async def child_stderr(name: str) -> TextIO:
    """The writing end of a pipe whose lines are relayed to our stderr as
    ``name: line``. Give it to the child as its stderr, then close it: the relay ends
    when the child's copies are closed too."""
    read_fd, write_fd = os.pipe()
    try:
        reading = os.fdopen(read_fd, "rb", buffering=0)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    try:
        await asyncio.get_running_loop().connect_read_pipe(lambda: _Relay(name), reading)
    except BaseException:
        reading.close()
        os.close(write_fd)
        raise
    return os.fdopen(write_fd, "w")
