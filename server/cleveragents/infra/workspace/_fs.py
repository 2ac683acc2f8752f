"""File helpers shared by the blob store and the journal: whole-file atomic writes.

A write goes to a temp file next to the target and is renamed over it, so a reader
(or a crash) sees the old file or the new one, never half of one. Temp names carry
``TEMP_MARKER`` so a later recovery can find and remove the leftovers.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TEMP_MARKER = ".cleveragents-tmp-"
_CHUNK = 1 << 20


def temp_path(target: str) -> str:
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}{TEMP_MARKER}{os.urandom(6).hex()}")


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARKER in name


def write_atomic(target: str | Path, data: bytes, mode: int | None, *, durable: bool) -> None:
    """Replace ``target`` with ``data`` and permission bits ``mode`` (``None``: private
    to us). Without ``durable`` the pages are left to the OS: a killed process loses
    nothing, only a power cut could."""
    target = os.fspath(target)
    tmp = temp_path(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
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
