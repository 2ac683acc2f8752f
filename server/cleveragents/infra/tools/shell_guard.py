"""Runs one ``shell.run`` command, and kills its process group if the server dies.

``python -I -S shell_guard.py ARGV...``: the server starts this as the leader of a new
session, with a pipe on stdin that it never writes to. The guard starts the command in
its group (stdin closed, stdout and stderr shared) and waits for whichever comes
first: the command exits (the guard exits the same way), or the pipe reaches end of
file because the server is gone, even by SIGKILL, and the guard kills the whole group.
Without it a command outlived a killed server until its own end.

Standard library only, and run without ``site``: it adds about 25 ms to a command
(a Python start). Started any other way than as its group's leader, it kills only the
command, never the caller's group.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

POLL_SECONDS = 0.05  # where pidfd_open is missing (not Linux): how often the command is checked


def _exit_like(status: int) -> None:
    """Exit with the command's code, or die of its signal, so the server reads the same."""
    if status < 0:
        if -status != signal.SIGKILL:  # SIGKILL has no handler to reset
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def _server_gone() -> bool:
    return os.read(0, 1) == b""


def main(argv: list[str]) -> None:
    try:
        command = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"{argv[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127)
    pidfd = os.pidfd_open(command.pid) if hasattr(os, "pidfd_open") else None
    while True:
        readable, _, _ = select.select([0] if pidfd is None else [0, pidfd], [], [],
                                       POLL_SECONDS if pidfd is None else None)
        if 0 in readable and _server_gone():
            if os.getpgid(0) == os.getpid():  # leading its own group, as the server starts it
                os.killpg(0, signal.SIGKILL)  # the command, what it started, and this guard
            command.kill()  # started some other way: never signal the caller's group
            _exit_like(command.wait())
        if command.poll() is not None:
            _exit_like(command.returncode)


if __name__ == "__main__":
    main(sys.argv[1:])
