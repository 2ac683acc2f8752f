"""Server processes in tests: stopping them, letting go of their pipes, reading their
memory."""

from __future__ import annotations

import contextlib
import subprocess
import threading


def stop(proc: subprocess.Popen[bytes], reader: threading.Thread | None = None, timeout: float = 15.0) -> None:
    """Kill ``proc`` if it still runs, wait for it, give ``reader`` up to ``timeout``
    seconds to finish reading its stdout, and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if reader is not None:
        reader.join(timeout)
    close_pipes(proc, reader)


def close_pipes(proc: subprocess.Popen[bytes], reader: threading.Thread | None = None) -> None:
    """Close the stdin and stdout of ``proc``, which has exited. stdout stays open while
    ``reader`` (the thread that reads it) is still at it: a child of the server holds the
    pipe, and the reader's end of input closes nothing it needs."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):  # what the server didn't read can't be flushed any more
            proc.stdin.close()
    if proc.stdout is not None and (reader is None or not reader.is_alive()):
        proc.stdout.close()


def memory_bytes(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of process ``pid`` from /proc (``VmRSS``: resident now;
    ``VmHWM``: its peak), in bytes; 0 once the process is gone or a zombie (which has
    none)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0
