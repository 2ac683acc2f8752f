"""The stderr log handler on a real pipe that nobody reads: logging never blocks, what
waits is bounded, and the lines dropped are counted and then said."""

from __future__ import annotations

import logging
import os
import threading

from cleveragents.transports.stderr_log import StderrLog

LINES = 5000
BOUND = 20_000  # bytes queued at most, besides what the pipe holds


def _read_all(fd: int, into: list[bytes]) -> None:
    while chunk := os.read(fd, 65536):
        into.append(chunk)


def test_a_full_pipe_drops_lines_past_the_bound_and_then_says_how_many():
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "w")
    handler = StderrLog(stream, max_queued_bytes=BOUND)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("tests.stderr_log")
    logger.propagate = False
    logger.addHandler(handler)
    read: list[bytes] = []
    try:
        logging_thread = threading.Thread(target=lambda: [logger.warning("line %04d %s", i, "x" * 90)
                                                          for i in range(LINES)])
        logging_thread.start()
        logging_thread.join(30)
        assert not logging_thread.is_alive(), "logging blocked on the full pipe"
        assert 0 < handler.dropped < LINES

        reader = threading.Thread(target=_read_all, args=(read_fd, read))
        reader.start()
        handler.flush()  # what waits is written, now that the pipe is read
        logger.warning("after")  # the first line that fits: the count goes before it
        handler.flush()
        stream.close()
        reader.join(30)
    finally:
        logger.removeHandler(handler)
        os.close(read_fd)
    lines = b"".join(read).decode().splitlines()
    assert lines[-1] == "after"
    # Line by line, in order: a gap (lines dropped while the queue was full) is said, with
    # its size, just before the next line that got in.
    expected, notices = 0, 0
    for line in lines[:-1]:
        if line.endswith(" writes to stderr were dropped: it was not being read"):
            expected += int(line.split()[0])
            notices += 1
        else:
            assert line == f"line {expected:04d} {'x' * 90}"
            expected += 1
    assert notices >= 1 and expected == LINES
