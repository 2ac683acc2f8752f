"""The upper layer of a command's overlay: planted before the command, read after it.

Before: the plan's pending files are copied in and its deletions become whiteouts, so
the command sees the workspace as the plan has it; each protected path gets a whiteout
too, so the command doesn't see it. After: every entry of the layer that differs from
what was planted is a change the command made. A whiteout (a 0/0 character device) is
a deletion; a directory marked opaque hides all that was below it in the workspace.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from cleveragents.infra.workspace.overlay import Overlay

_OPAQUE = (b"user.overlay.opaque", b"trusted.overlay.opaque")
_WHITEOUT = stat.S_IFCHR


@dataclass(slots=True)
class LayerChanges:
    """What a command did to the files: ``written`` (path -> (size, mode)), ``deleted``
    paths, and ``unsupported`` (path -> what it is: a symlink, a FIFO, ...), which a plan
    can't carry. A written file's bytes stay in the layer until ``read``: a command may
    leave more there than memory holds, and most of it may be ignored."""

    upper: str
    written: dict[str, tuple[int, int]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    unsupported: dict[str, str] = field(default_factory=dict)

    def read(self, path: str) -> bytes:
        """A written file's bytes, while the layer is there."""
        with open(os.path.join(self.upper, path), "rb") as file:
            return file.read()


def _whiteout(path: str) -> None:
    os.mknod(path, _WHITEOUT | 0o000, os.makedev(0, 0))


def _is_whiteout(info: os.stat_result) -> bool:
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


@dataclass(frozen=True, slots=True)
class Planted:
    """What ``plant`` put in the layer: ``files`` maps a path to its blob digest, or to
    ``None`` for a whiteout; ``hidden`` are the protected paths among them."""

    files: dict[str, str | None]
    hidden: frozenset[str]

    def covers_hidden(self, path: str) -> bool:
        """Whether ``path`` is a hidden path or lies below one."""
        parts = path.split("/")
        return any("/".join(parts[:depth]) in self.hidden for depth in range(1, len(parts) + 1))


def plant(upper: str, overlay: Overlay, hidden: Iterable[str]) -> Planted:
    """Fill ``upper`` before the command."""
    files: dict[str, str | None] = {}
    for path in hidden:
        target = os.path.join(upper, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _whiteout(target)
        files[path] = None
    hidden_paths = frozenset(files)
    for entry in overlay.entries():
        if entry.path in files:
            continue  # a protected path the plan changed stays hidden: the plan has it, the command doesn't
        target = os.path.join(upper, entry.path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if entry.blob is None:
            _whiteout(target)
        else:
            shutil.copyfile(overlay.blobs.path(entry.blob), target)
            os.chmod(target, entry.mode if entry.mode is not None else 0o644)
        files[entry.path] = entry.blob
    return Planted(files, hidden_paths)


def _opaque(path: str) -> bool:
    for name in _OPAQUE:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _walk(upper: str) -> Iterator[tuple[str, os.stat_result, bool]]:
    """``(relative path, lstat, opaque)`` of every entry below ``upper``."""
    pending = [""]
    while pending:
        relative = pending.pop()
        for entry in os.scandir(os.path.join(upper, relative) if relative else upper):
            path = f"{relative}/{entry.name}" if relative else entry.name
            info = entry.stat(follow_symlinks=False)
            is_directory = stat.S_ISDIR(info.st_mode)
            yield path, info, is_directory and _opaque(entry.path)
            if is_directory:
                pending.append(path)


def read_changes(upper: str, overlay: Overlay, planted: Planted) -> LayerChanges:
    """What the command changed, against the view it was given (``overlay``)."""
    changes = LayerChanges(upper)
    present: set[str] = set()
    for path, info, opaque in _walk(upper):
        present.add(path)
        if stat.S_ISDIR(info.st_mode):
            if opaque and path not in planted.files:  # emptied, then made anew: what was below is gone
                changes.deleted.update(overlay.files_below(path))
            continue
        if _is_whiteout(info):
            if path in planted.files and planted.files[path] is None:
                continue
            changes.deleted.add(path)
            changes.deleted.update(overlay.files_below(path))
        elif stat.S_ISREG(info.st_mode):
            changes.written[path] = (info.st_size, stat.S_IMODE(info.st_mode))
        else:
            changes.unsupported[path] = _kind(info)
    for path, blob in planted.files.items():
        if path not in present and blob is not None:
            changes.deleted.add(path)  # a file only the plan had, removed: no whiteout is needed for it
    # Files written below a directory that replaced a deleted one are not deleted; what
    # was hidden from the command it can't have deleted.
    changes.deleted.difference_update(changes.written)
    changes.deleted = {path for path in changes.deleted if not planted.covers_hidden(path)}
    return changes


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"
