"""File helpers shared by the workspace modules: whole-file atomic writes, and
reads of workspace files that nothing placed there can hang.

A write goes to a temp file next to the target and is renamed over it, so a reader
(or a crash) sees the old file or the new one, never half of one. Temp names carry
``TEMP_MARKER`` so a later recovery can find and remove the leftovers.

Given ``dir_fd``, a name is looked up in that open directory (``_dirfd.Dirs``), never
through a path: the workspace's files are reached that way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

TEMP_MARKER = ".cleveragents-tmp-"
_CHUNK = 1 << 20


def within(real: str, real_root: str) -> bool:
    """Whether the resolved path ``real`` is ``real_root`` or below it."""
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def temp_path(target: str) -> str:
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}{TEMP_MARKER}{os.urandom(6).hex()}")


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARKER in name


def write_atomic(target: str | Path, data: bytes, mode: int | None, *, durable: bool, dir_fd: int | None = None) -> None:
    """Replace ``target`` with ``data`` and permission bits ``mode`` (``None``: private
    to us). Without ``durable`` the pages are left to the OS: a killed process loses
    nothing, only a power cut could. The rename replaces whatever has the name (a
    symlink included) and never follows it."""
    target = os.fspath(target)
    tmp = temp_path(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mode is not None:
                os.fchmod(fd, mode)  # unlike the open mode, not narrowed by the umask
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def read_file(path: Path | str) -> bytes:
    """A whole file in as few system calls as we can: open, read, close. A short
    read of a regular file means its end."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, _CHUNK)]
        while len(chunks[-1]) == _CHUNK:
            chunks.append(os.read(fd, _CHUNK))
    finally:
        os.close(fd)
    return b"".join(chunks) if len(chunks) > 1 else chunks[0]


class NotRegularFile(OSError):
    """A FIFO, socket or device where a file was expected."""


class TooLarge(OSError):
    """The file is bigger than the caller's limit; ``info`` is its ``stat``."""

    def __init__(self, path: str, info: os.stat_result, limit: int) -> None:
        super().__init__(errno.EFBIG, f"over {limit} bytes", path)
        self.info = info
        self.limit = limit


def read_regular(path: Path | str, *, limit: int | None = None, dir_fd: int | None = None) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes and ``stat``. ``O_NONBLOCK``: opening a FIFO would
    otherwise wait for a writer forever. A directory raises ``IsADirectoryError``;
    a symlink (the last part of ``path`` is not followed) or anything else that is
    not a regular file raises ``NotRegularFile``; a file over ``limit`` bytes
    raises ``TooLarge`` before a byte of it is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # callers pass link-free paths: a link here was swapped in
            raise NotRegularFile(errno.ELOOP, "a symlink", os.fspath(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", os.fspath(path))
        if limit is not None and info.st_size > limit:
            raise TooLarge(os.fspath(path), info, limit)
        chunks = [os.read(fd, info.st_size + 1)]  # one call for a file that stays put
        total = len(chunks[0])
        while chunks[-1] and (limit is None or total <= limit):
            chunks.append(os.read(fd, _CHUNK))
            total += len(chunks[-1])
    finally:
        os.close(fd)
    if limit is not None and total > limit:  # it grew while we read it
        raise TooLarge(os.fspath(path), info, limit)
    return b"".join(chunks), info


def fsync_dir(directory: str | Path) -> None:
    """Make a rename or unlink in ``directory`` survive a power cut."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_temp_files(directory: str | Path) -> int:
    """Delete the temp files an interrupted write left in ``directory``."""
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        if is_temp_name(entry.name) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
            removed += 1
    return removed
