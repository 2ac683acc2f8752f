"""The stdio writer's bound, on a real pipe that nobody reads."""

from __future__ import annotations

import asyncio
import os

from cleveragents.transports.lsp.pipe_writer import PipeWriter

LIMIT = 100_000


async def test_the_writer_gives_up_once_output_waits_past_its_limit():
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb", buffering=0)
    try:
        writer = await PipeWriter.open(stream, LIMIT)
        reasons: list[str] = []
        writer.on_overflow = reasons.append
        writer.write(b"x" * (3 * LIMIT))  # one big frame, nothing waiting before it: no stall yet
        await asyncio.sleep(0)
        assert reasons == [] and writer.buffered > LIMIT
        writer.write(b"y" * 10)  # more output while that still waits: the client is behind
        assert len(reasons) == 1 and f"more than {LIMIT} bytes" in reasons[0]
        assert writer.buffered == 0  # dropped, not held
        writer.write(b"z" * LIMIT)  # nothing more is written or kept
        assert writer.buffered == 0 and len(reasons) == 1
        await asyncio.sleep(0)
        writer.close()
    finally:
        os.close(read_fd)


async def test_a_pass_writes_its_first_frame_at_once_and_the_rest_together_in_order():
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb", buffering=0)
    try:
        writer = await PipeWriter.open(stream, LIMIT)
        writer.write(b"frame 0;")
        assert os.read(read_fd, 1024) == b"frame 0;"  # a lone answer waits for nothing
        for i in range(1, 3):
            writer.write(b"frame %d;" % i)
        assert writer.buffered == 2 * len(b"frame 0;")  # held until the pass ends
        await asyncio.sleep(0)
        assert os.read(read_fd, 1024) == b"frame 1;frame 2;" and writer.buffered == 0
        writer.write(b"frame 3;")  # a new pass: at once again
        assert os.read(read_fd, 1024) == b"frame 3;"
        writer.write(b"last")
        writer.close()  # what is still pending goes out before the pipe closes
        assert os.read(read_fd, 1024) == b"last"
    finally:
        os.close(read_fd)
