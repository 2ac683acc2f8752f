"""A server process that says ``listening on URL`` on stderr once it is bound.

The HTTP and gRPC entry points the tests start print that line once they are bound to
a free port (``--port 0``). ``listening`` starts one, waits for the line, and stops
the process afterwards. What the server writes to stderr after the line is read by a
thread, so a chatty server never blocks on a full pipe, and is there for a failing
test to show (``Listening.stderr``).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

STOP_SECONDS = 15.0


@dataclass
class Listening:
    process: subprocess.Popen[str]
    line: str  # the "listening on URL" line, as written
    before: list[str]  # the lines before it (e.g. "gRPC listening on HOST:PORT")
    after: list[str] = field(default_factory=list)  # the lines since, as they come

    @property
    def url(self) -> str:
        return self.line.split()[-1]

    def stderr(self) -> str:
        return "".join([*self.before, self.line, *self.after])


@contextmanager
def listening(argv: list[str], *, clean_exit: bool = False, kill: bool = False, **popen: Any) -> Iterator[Listening]:
    """Start ``argv`` and yield once it listens. On the way out it is terminated (or,
    with ``kill``, killed; one that has exited already is left alone) and waited for;
    ``clean_exit``: it must then exit 0. ``popen``: ``subprocess.Popen``'s keywords."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, **popen)
    stderr = process.stderr
    assert stderr is not None
    reader: threading.Thread | None = None
    try:
        before: list[str] = []
        while not (line := stderr.readline()).startswith("listening on "):
            assert line, f"{argv[0]} stopped before listening:\n{''.join(before)[-1500:]}"
            before.append(line)
        served = Listening(process, line, before)
        reader = threading.Thread(target=lambda: served.after.extend(stderr), daemon=True)
        reader.start()
        yield served
    finally:
        if process.poll() is None:
            process.kill() if kill else process.terminate()
        code = process.wait(STOP_SECONDS)
        if reader is not None:
            reader.join(STOP_SECONDS)
        if reader is None or not reader.is_alive():  # else a child of the server still holds it
            stderr.close()
    if clean_exit:
        assert code == 0, f"{argv[0]} exited with {code}:\n{served.stderr()[-1500:]}"
