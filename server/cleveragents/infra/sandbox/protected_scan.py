"""Which workspace paths a command must not see: the protected-paths list, on disk.

A command's view of the workspace is an overlay whose upper layer starts with a
whiteout for each of them, so they are absent rather than unreadable. Finding them
takes a walk of the workspace. A directory's entries only change with its mtime, so
a walk keeps each directory's findings with the mtime it had, and the next walk reads
again only the directories that changed: one ``stat`` each for the rest.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass

from cleveragents.domain.guards import GuardPolicy


@dataclass(frozen=True, slots=True)
class _Directory:
    mtime_ns: int
    hidden: tuple[str, ...]  # workspace-relative paths of the protected entries in it
    subdirectories: tuple[str, ...]  # those to walk on (not hidden, not symlinks)


class ProtectedScan:
    """Thread-safe; one per workspace and policy."""

    def __init__(self, root: str, policy: GuardPolicy) -> None:
        self.root = os.path.realpath(root)
        self.policy = policy
        self._directories: dict[str, _Directory] = {}
        self._lock = threading.Lock()

    def hidden(self) -> list[str]:
        """The protected files and directories now in the workspace (a directory stands
        for everything below it), sorted."""
        with self._lock:
            found: list[str] = []
            seen: dict[str, _Directory] = {}
            pending = [""]
            while pending:
                relative = pending.pop()
                directory = self._directory(relative)
                if directory is None:
                    continue
                seen[relative] = directory
                found.extend(directory.hidden)
                pending.extend(directory.subdirectories)
            self._directories = seen  # forget the directories that are gone
            return sorted(found)

    def _directory(self, relative: str) -> _Directory | None:
        path = os.path.join(self.root, relative) if relative else self.root
        try:
            mtime_ns = os.lstat(path).st_mtime_ns
        except OSError:
            return None
        known = self._directories.get(relative)
        if known is not None and known.mtime_ns == mtime_ns:
            return known
        hidden, subdirectories = [], []
        try:
            entries = list(os.scandir(path))
        except OSError:
            return None
        for entry in entries:
            child = f"{relative}/{entry.name}" if relative else entry.name
            try:
                is_directory = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue
            if self.policy.matches_protected_path(child, directory=is_directory):
                hidden.append(child)
            elif is_directory:
                subdirectories.append(child)
        return _Directory(mtime_ns, tuple(hidden), tuple(subdirectories))
