"""The stderr log handler on a real pipe that nobody reads: logging never blocks, what
waits is bounded, and the lines dropped are counted and then said."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time

from cleveragents.transports.stderr_log import EXIT_FLUSH_SECONDS, StderrLog

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

    def warn(message: str, *args: object) -> None:
        # To the handler itself: a logger's level or ``disabled`` is the process's state,
        # which other tests in this worker may have changed.
        handler.handle(logging.LogRecord("tests.stderr_log", logging.WARNING, __file__, 0, message, args, None))

    read: list[bytes] = []
    try:
        logging_thread = threading.Thread(target=lambda: [warn("line %04d %s", i, "x" * 90) for i in range(LINES)])
        logging_thread.start()
        logging_thread.join(30)
        assert not logging_thread.is_alive(), "logging blocked on the full pipe"
        assert 0 < handler.dropped < LINES

        reader = threading.Thread(target=_read_all, args=(read_fd, read))
        reader.start()
        handler.flush()  # what waits is written, now that the pipe is read
        warn("after")  # the first line that fits: the count goes before it
        handler.flush()
        stream.close()
        reader.join(30)
    finally:
        handler.close()
        os.close(read_fd)
        if not stream.closed:  # closed here, not by its finalizer: the number may be another's by then
            stream.close()
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


def test_after_the_exit_flush_a_write_is_written_in_place():
    """What is written once ``logging.shutdown`` closed the handler (an exit handler
    registered earlier) can't wait for the thread: it is in the pipe when the call returns."""
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "w")
    handler = StderrLog(stream)
    try:
        handler.write_bytes(b"queued\n")
        handler.flush()
        handler.close()
        handler.write_bytes(b"late\n")
        os.set_blocking(read_fd, False)
        assert os.read(read_fd, 65536) == b"queued\nlate\n"
    finally:
        stream.close()
        os.close(read_fd)


def test_after_the_exit_flush_a_pipe_nobody_reads_holds_up_the_exit_a_bounded_while():
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "w")
    handler = StderrLog(stream)
    try:
        os.set_blocking(write_fd, False)
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(write_fd, b"x" * 4096)  # the pipe is full
        os.set_blocking(write_fd, True)
        handler.close()
        started = time.monotonic()
        handler.write_bytes(b"late\n")  # waits for room until the exit's deadline at most
        assert time.monotonic() - started < EXIT_FLUSH_SECONDS + 1.0
        started = time.monotonic()
        handler.write_bytes(b"later\n")  # the pipe stayed full: dropped at once
        assert time.monotonic() - started < 0.1
    finally:
        stream.close()
        os.close(read_fd)
