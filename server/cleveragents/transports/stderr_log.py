"""The log handler: lines written to stderr by a thread of their own.

A client may pipe the server's stderr and never read it (a script that reads only
stdout). Written where they are logged, the lines would block the event loop once the
pipe is full (64 KiB on Linux), and the server would stop answering. Here a record is
formatted where it is logged (redaction included) and queued, and a daemon thread
writes the queue to the stderr file descriptor. What waits is bounded: past
``MAX_QUEUED_BYTES`` a write is dropped and counted, and the next one that fits is
preceded by a line that says how many were. At exit (``logging.shutdown`` flushes every
handler) the queue gets ``EXIT_FLUSH_SECONDS`` to be written, then the process goes.
What is written after that (an exit handler registered earlier, spans exported at
exit) would wait in the queue for a thread that exits with the process: it is written
where it is written, if the queue was emptied, each write waiting at most until
``EXIT_FLUSH_SECONDS`` after the flush for room in the pipe, else dropped.

Once stdout carries the protocol, ``sys.stdout`` and ``sys.stderr`` are
``stray_output``: what a published agent's handler or a library prints, or warns, goes
to stderr through the same queue, so it can't block its thread either.

The thread writes with ``os.write``, not through ``sys.stderr``: a daemon thread stuck
in a buffered stream's write would hold its lock, which the interpreter takes to flush
stderr at exit.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import select
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

MAX_QUEUED_BYTES = 4 * 1024 * 1024
EXIT_FLUSH_SECONDS = 2.0
PIPE_BUF = 4096  # POSIX: a pipe ready for writing takes this many bytes without blocking


class StderrLog(logging.Handler):
    def __init__(self, stream: TextIO, max_queued_bytes: int = MAX_QUEUED_BYTES) -> None:
        super().__init__()
        self.fd = stream.fileno()
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self._max_queued = max_queued_bytes
        self._lines: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._queued = 0  # bytes queued and not yet written
        self._written = threading.Condition()
        self.dropped = 0  # writes dropped since the last one queued
        self._exit_deadline: float | None = None  # monotonic; set by ``close``: no more queueing
        threading.Thread(target=self._write_lines, name="cleveragents-stderr", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        # Called under the handler's lock (``Handler.handle``).
        try:
            line = self._line(record)
        except Exception:  # noqa: BLE001 - logging reports its own errors
            self.handleError(record)
            return
        self._put(line)

    def write_bytes(self, data: bytes) -> None:
        """Bytes written to stderr outside logging (``stray_output``), in the same queue."""
        self.acquire()
        try:
            self._put(data)
        finally:
            self.release()

    def _put(self, data: bytes) -> None:
        """Under the handler's lock: one write queued at a time."""
        if self._exit_deadline is not None:
            self._write_at_exit(data)
            return
        if self.dropped:
            notice = logging.LogRecord("cleveragents.log", logging.WARNING, __file__, 0,
                                       "%d writes to stderr were dropped: it was not being read", (self.dropped,),
                                       None)
            if not self._queue(self._line(notice)):
                self.dropped += 1
                return
            self.dropped = 0
        if not self._queue(data):
            self.dropped += 1

    def close(self) -> None:
        """At exit (``logging.shutdown``, after ``flush``): from now on, write in place."""
        self.acquire()
        try:
            if self._exit_deadline is None:
                self._exit_deadline = time.monotonic() + EXIT_FLUSH_SECONDS
        finally:
            self.release()
        super().close()

    def _write_at_exit(self, data: bytes) -> None:
        with self._written:
            if self._queued:  # the flush ran out of time: the pipe is not being read
                return
        view = memoryview(data)
        try:
            while view:
                left = self._exit_deadline - time.monotonic() if self._exit_deadline is not None else 0.0
                if left <= 0 or not select.select([], [self.fd], [], left)[1]:
                    self._exit_deadline = 0.0  # the pipe stayed full: drop the rest at once
                    return
                view = view[os.write(self.fd, view[:PIPE_BUF]):]
        except (OSError, ValueError):
            pass  # stderr is closed: nobody is left to read it

    def flush(self) -> None:
        """Wait, at most ``EXIT_FLUSH_SECONDS``, until every queued line is written."""
        with self._written:
            self._written.wait_for(lambda: self._queued == 0, EXIT_FLUSH_SECONDS)

    def _line(self, record: logging.LogRecord) -> bytes:
        return (self.format(record) + "\n").encode(self.encoding, "backslashreplace")

    def _queue(self, line: bytes) -> bool:
        with self._written:
            if self._queued and self._queued + len(line) > self._max_queued:
                return False
            self._queued += len(line)
        self._lines.put(line)
        return True

    def _write_lines(self) -> None:
        while True:
            line = self._lines.get()
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                pass  # stderr is closed: nobody is left to read the line
            with self._written:
                self._queued -= len(line)
                self._written.notify_all()


class _QueuedStderr(io.RawIOBase):
    """Bytes for stderr, queued by ``log``."""

    name = "<stderr>"

    def __init__(self, log: StderrLog) -> None:
        self._log = log

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer) -> int:
        chunk = bytes(data)
        self._log.write_bytes(chunk)
        return len(chunk)

    def fileno(self) -> int:
        return self._log.fd


def stray_output(log: StderrLog) -> io.TextIOWrapper:
    """``sys.stdout`` once stdout carries the protocol: what is printed to it goes to
    stderr, queued by ``log``."""
    return io.TextIOWrapper(_QueuedStderr(log), encoding=log.encoding, errors="backslashreplace",
                            line_buffering=True, write_through=True)
