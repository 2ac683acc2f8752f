"""This process's directory in the system's temporary directory, and the removal of
those that processes left behind when they died without removing theirs (SIGKILL, a
power cut).

What the server keeps there (the in-memory store's scratch, a sandboxed command's run
directory, the sandbox's probe) lives in one directory per process,
``cleveragents-process-XXXXXXXX``, mode 0700, removed at exit. The process holds an
exclusive ``flock`` on it for as long as it lives, and the kernel lets go of it when
the process ends, however it ends. The first use in a process sweeps the temporary
directory for others of that name whose lock can be taken: their process is gone.
Only directories this user owns (not links to them) and that are older than a minute
are considered: a directory exists for a moment before it is locked.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import stat
import tempfile
import threading
import time

from cleveragents.infra.sandbox.launch import remove_tree

logger = logging.getLogger("cleveragents.tmp")

PREFIX = "cleveragents-process-"
# Seconds a directory must have been left alone before a sweep may take it.
SWEEP_MIN_AGE = 60.0

_making = threading.Lock()
_mine: tuple[str, int, int] | None = None  # the directory, the descriptor holding its lock, and our pid


def process_dir() -> str:
    """This process's directory, made (after a sweep) on first use."""
    global _mine
    with _making:
        if _mine is None or _mine[2] != os.getpid():  # a forked child makes its own
            base = tempfile.gettempdir()
            swept = sweep(base)
            if swept:
                logger.info("removed %d temporary directories of stopped servers", len(swept))
            path = tempfile.mkdtemp(prefix=PREFIX, dir=base)
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            # New, so nobody else holds it. A filesystem without locks refuses every
            # sweep's too (``_abandoned``): the directory is then only removed at exit.
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _mine = (path, fd, os.getpid())
            atexit.register(_remove_mine)
        return _mine[0]


def new_dir(kind: str) -> str:
    """A new directory for one use (``kind`` names it) in this process's directory."""
    return tempfile.mkdtemp(prefix=f"{kind}-", dir=process_dir())


def sweep(base: str, now: float | None = None) -> list[str]:
    """Remove the process directories in ``base`` whose process is gone; their paths."""
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        names = [name for name in os.listdir(base) if name.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(base, name)
        if _abandoned(path, now):
            remove_tree(path)
            removed.append(path)
    return removed


def _abandoned(path: str, now: float) -> bool:
    """Whether ``path`` is this user's directory, old enough, and unlocked. The lock
    taken to find out goes with the descriptor: by then nobody else can take it but a
    sweep, and removing a directory twice is harmless."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:  # gone, a link, not a directory, or not ours to read
        return False
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or not stat.S_ISDIR(info.st_mode) or now - info.st_mtime < SWEEP_MIN_AGE:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its process is alive
            return False
        return True
    finally:
        os.close(fd)


def _remove_mine() -> None:
    global _mine
    with _making:
        if _mine is None or _mine[2] != os.getpid():
            return
        path, fd, _ = _mine
        remove_tree(path)
        with contextlib.suppress(OSError):
            os.close(fd)
        _mine = None
