"""The state directory (``<workspace>/.cleveragents`` by default)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The state stays out of version control; the workspace's own actions and its
# configuration file (which names key variables, never keys) may be committed.
GITIGNORE = """\
# Written by CleverAgents: its state is local to this machine.
*
!actions/
!actions/**
!config.toml
"""


def prepare_state_dir(path: Path) -> Path:
    """Create ``path`` if needed, with a ``.gitignore`` (never overwriting one)."""
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        try:
            with open(ignore, "x", encoding="utf-8") as out:
                out.write(GITIGNORE)
        except FileExistsError:  # another process just wrote it
            pass
    return path


OWNER_LOCK = "owner.lock"


class StateDirOwner:
    """An advisory lock that says a live process is using the state directory.

    Start-up repair treats running plans and tasks as interrupted, which is right only
    when no other process is running them: the editor's server and an ``agents``
    command often share one workspace. The lock is held for the process's life; the
    OS drops it when the process dies, however it dies.
    """

    def __init__(self, state_dir: Path):
        self._path = state_dir / OWNER_LOCK
        self._file: Any = None

    def try_acquire(self) -> bool:
        """True if this process now owns the state directory (or already did)."""
        import fcntl

        if self._file is not None:
            return True
        handle = open(self._path, "a+b")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by another process (BlockingIOError), or locks unsupported here
            handle.close()
            return False
        self._file = handle
        return True

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the file releases the lock
            self._file = None
