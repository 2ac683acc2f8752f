"""Workspace files reached through directory descriptors, never through a symlink.

A path below the root is opened one component at a time, each relative to its
parent's descriptor with ``O_NOFOLLOW``. Where a directory is expected, a symlink
stops the walk (``SymlinkInPath``), and so does anything else that is not a directory
(``NotADirectoryError``). A link swapped in at any moment can then only make an
operation fail: no read or write is ever sent outside the root. Once open, a
directory's descriptor stays that directory whatever its name becomes, so one
operation (an apply, and its undo) keeps working where it began.

Paths are workspace-relative, ``/``-separated and link-free (the overlay records
paths with links resolved); the errors name them, never the server's own paths.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import OrderedDict
from collections.abc import Collection
from pathlib import Path
from types import TracebackType
from typing import Self

from cleveragents.infra.workspace._fs import is_temp_name, read_regular

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
# A descriptor walk has no length limit; a path no tool could open by name is refused as the OS would.
_PATH_MAX = 4096
# Descriptors one operation keeps open at most; the oldest is closed past it.
MAX_OPEN_DIRS = 256


class SymlinkInPath(OSError):
    """A symlink where a directory of the path was expected."""


def components(path: str, room: int = _PATH_MAX) -> list[str]:
    """``path``'s names, checked: none empty, ``.`` or ``..``, so no walk can climb
    out (and an absolute path, which ``dir_fd`` would ignore, never gets here); and
    the whole at most ``room`` bytes."""
    if len(os.fsencode(path)) >= room:
        raise OSError(errno.ENAMETOOLONG, "File name too long", path)
    parts = path.split("/") if path else []
    for part in parts:
        if part in ("", ".", "..") or "\0" in part:
            raise OSError(errno.EINVAL, "not a normalized workspace path", path)
    return parts


class Dirs:
    """The open directories of one operation below ``root`` (a context manager:
    leaving it closes them all). A directory is walked once and its descriptor kept,
    up to ``max_open`` of them. Not for use by two threads at once."""

    def __init__(self, root: str | Path, *, max_open: int = MAX_OPEN_DIRS) -> None:
        # The root itself is the configured path, a link to it included.
        self._root = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._room = _PATH_MAX - len(os.fsencode(root)) - 1
        self._open: OrderedDict[str, int] = OrderedDict()
        self._max_open = max(2, max_open)

    def close(self) -> None:
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()
        if self._root >= 0:
            os.close(self._root)
            self._root = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- directories ----------------------------------------------------------

    def dir_fd(self, directory: str, *, create: Collection[str] = ()) -> int | None:
        """The descriptor of ``directory`` ("" is the root); ``None`` when a part of it
        does not exist, unless ``create`` names that part: then it is made (mode
        0o777 less the umask, as ``mkdir -p``). Raises ``SymlinkInPath`` or
        ``NotADirectoryError`` naming the first part that is not a directory. The
        descriptor is the caller's to use at once, not to keep: a later call may
        close it."""
        if not directory:
            return self._root
        fd = self._open.get(directory)
        if fd is not None:
            self._open.move_to_end(directory)
            return fd
        parts = components(directory, self._room)
        known = len(parts) - 1  # how many leading parts an open descriptor covers
        while known > 0 and "/".join(parts[:known]) not in self._open:
            known -= 1
        prefix = "/".join(parts[:known])
        if prefix:
            self._open.move_to_end(prefix)
        fd = self._open[prefix] if prefix else self._root
        for depth in range(known, len(parts)):
            relative = "/".join(parts[: depth + 1])
            child = _open_child(fd, parts[depth], relative, relative in create)
            if child is None:
                return None
            self._keep(relative, child)
            fd = child
        return fd

    def _keep(self, directory: str, fd: int) -> None:
        self._open[directory] = fd
        while len(self._open) > self._max_open:  # the newest (the walk's parent and child) stay
            os.close(self._open.popitem(last=False)[1])

    def forget(self, directory: str) -> None:
        """Close the descriptors of ``directory`` and below: it was removed."""
        below = directory + "/"
        for name in [name for name in self._open if name == directory or name.startswith(below)]:
            os.close(self._open.pop(name))

    def parent(self, path: str, *, create: Collection[str] = ()) -> tuple[int | None, str]:
        """``(descriptor of the file's directory or None, the file's name)``."""
        directory, _, name = path.rpartition("/")
        fd = self._open.get(directory)
        if fd is not None and name not in ("", ".", "..") and "\0" not in name and 4 * len(path) < self._room:
            self._open.move_to_end(directory)  # checked when it was opened: only the name is new
            return fd, name
        if not components(path, self._room):
            raise OSError(errno.EINVAL, "not a normalized workspace path", path)
        return self.dir_fd(directory, create=create), name

    # -- files ------------------------------------------------------------------

    def read(self, path: str, *, limit: int | None = None) -> tuple[bytes, os.stat_result] | None:
        """A regular file's bytes and ``stat`` (``_fs.read_regular``); ``None`` when there
        is no file: a part of the path is missing or is a file."""
        try:
            fd, name = self.parent(path)
            if fd is None:
                return None
            return read_regular(name, limit=limit, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def lstat(self, path: str) -> os.stat_result | None:
        """The entry's own ``stat`` (a link is not followed); ``None`` when there is none."""
        try:
            fd, name = self.parent(path)
            return None if fd is None else os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def rmdir(self, directory: str) -> None:
        """Remove an empty directory (never what a link there points to)."""
        fd, name = self.parent(directory)
        if fd is None:
            raise FileNotFoundError(errno.ENOENT, "no such directory", directory)
        self.forget(directory)
        os.rmdir(name, dir_fd=fd)

    def fsync(self, directory: str) -> None:
        """Make the renames and unlinks in ``directory`` survive a power cut."""
        fd = self.dir_fd(directory)
        if fd is not None:
            os.fsync(fd)

    def remove_temp_files(self, directory: str) -> int:
        """Delete the temp files an interrupted write left in ``directory``."""
        try:
            fd = self.dir_fd(directory)
        except (SymlinkInPath, NotADirectoryError):
            return 0
        if fd is None:
            return 0
        removed = 0
        with os.scandir(fd) as entries:  # scandir works on a duplicate: fd stays ours
            names = [entry.name for entry in entries if is_temp_name(entry.name) and entry.is_file(follow_symlinks=False)]
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
                removed += 1
        return removed


def _open_child(parent: int, name: str, relative: str, create: bool) -> int | None:
    """Open directory ``name`` in ``parent`` without following a link; ``relative`` names
    it in errors. ``None``: there is none (and ``create`` is off)."""
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            return None
    except OSError as exc:
        raise _not_a_directory(parent, name, relative, exc) from None
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened below all the same
        os.mkdir(name, 0o777, dir_fd=parent)
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)  # a link swapped in after the mkdir stops here
    except OSError as exc:
        raise _not_a_directory(parent, name, relative, exc) from None


def _not_a_directory(parent: int, name: str, relative: str, exc: OSError) -> OSError:
    """The error for ``name`` that ``O_DIRECTORY | O_NOFOLLOW`` refused (Linux says
    ENOTDIR or ELOOP for a link): which it is, naming the relative path."""
    if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
        return type(exc)(exc.errno, exc.strerror, relative)
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return NotADirectoryError(errno.ENOTDIR, "not a directory", relative)
    if stat.S_ISLNK(info.st_mode):
        return SymlinkInPath(errno.ELOOP, "a symlink is where a directory was", relative)
    return NotADirectoryError(errno.ENOTDIR, "not a directory", relative)
