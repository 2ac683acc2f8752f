"""A plan's overlay: its writes and deletions, kept over the workspace on disk.

Reads see the overlay first, then the disk; writes never touch the workspace. Every
path passes the guards (``domain.guards``) and must stay inside the root once
symlinks are resolved. The overlay records that resolved path, and the disk is read
through directory descriptors along it without following a link (``_dirfd``): a
directory swapped for a link after the check is refused, never read through. The
overlay itself is a map of small records (content lives in the ``BlobStore``), so a
plan's overlay can be stored and rebuilt after a restart.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeGuard

from cleveragents.domain.errors import (
    AuthorizationError,
    BudgetExceededError,
    ValidationError,
)
from cleveragents.domain.guards import GuardPolicy, normalize
from cleveragents.domain.plan_files import OverlayRecord, permission_bits
from cleveragents.infra.workspace._dirfd import Dirs, SymlinkInPath
from cleveragents.infra.workspace._fs import NotRegularFile, TooLarge
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.globs import compile_glob, literal_prefix
from cleveragents.infra.workspace.text import decode_text, editor_or_disk

NEW_FILE_MODE = 0o644
MAX_EDITOR_READS = 256  # files one overlay asks the caller's editor for; the disk answers past it


# Reads a file through the caller's editor (its unsaved buffer): the text as UTF-8
# bytes, or ``None`` when the editor has none. Called from worker threads.
ReadThrough = Callable[[str], "bytes | None"]


class Overlay:
    """Implements ``domain.tools.WorkspaceView``; safe to use from worker threads.

    With ``read_through`` (the caller's editor reads files), a text file the plan has
    not written is read from the editor, so the plan sees unsaved buffers; what it read
    is the base of its first write there, so the apply checks against it."""

    def __init__(self, root: Path, blobs: BlobStore, policy: GuardPolicy | None = None,
                 read_through: ReadThrough | None = None) -> None:
        self.root = Path(root)
        self.blobs = blobs
        self.policy = policy or GuardPolicy()
        self._real_root = os.path.realpath(self.root)
        self._entries: dict[str, OverlayRecord] = {}
        self._written = 0
        self._lock = threading.RLock()
        self._read_through = read_through
        self._read: dict[str, bytes] = {}  # what the editor gave, by path, where it differs from the disk
        self._asked: set[str] = set()  # the paths the editor was asked for

    # -- paths -------------------------------------------------------------------

    def resolve(self, path: str, *, write: bool = False) -> str:
        """The workspace-relative path the overlay records for ``path``: guarded,
        and with symlinks resolved (they must lead to a place inside the root)."""
        relative = self.policy.check(self._relative(path), write=write)
        real = os.path.realpath(os.path.join(self._real_root, relative))
        if not _inside(real, self._real_root):
            raise AuthorizationError(f"path {path!r} refused: symlink_escape", {"path": path, "reason": "symlink_escape"})
        target = Path(real).relative_to(self._real_root).as_posix()
        # The link's target must pass the guards too: `notes -> .git/config` is no way in.
        return target if target == relative else self.policy.check(target, write=write)

    def _relative(self, path: str) -> str:
        if not isinstance(path, str) or not os.path.isabs(path):
            return path
        absolute = os.path.normpath(path)
        for root in (os.path.normpath(self.root), self._real_root):
            if absolute.startswith(root + os.sep):
                return Path(absolute).relative_to(root).as_posix()
        raise AuthorizationError(f"path {path!r} refused: outside_workspace", {"path": path, "reason": "outside_workspace"})

    def _dirs(self) -> Dirs:
        """The workspace's directories for one call. Paths given to it are resolved
        (``resolve``): a link on the way now was swapped in since."""
        return Dirs(self._real_root)

    def _disk_stat(self, dirs: Dirs, relative: str) -> os.stat_result | None:
        """The workspace entry's own ``stat`` (``None``: there is none). A path the OS
        can't look up (a name too long) is refused naming the relative path: the OS
        error would name the server's."""
        try:
            return dirs.lstat(relative)
        except SymlinkInPath:
            raise _swapped(relative) from None
        except OSError as exc:
            raise _unusable(relative, exc) from None

    # -- WorkspaceView -----------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        relative = self.resolve(path)
        with self._lock:
            entry = self._entries.get(relative)
        limit = self.policy.max_read_bytes
        if entry is not None:
            if entry.blob is None:
                raise FileNotFoundError(2, "deleted by the plan", relative)
            if (size := self.blobs.size(entry.blob)) > limit:
                raise _over("max_read_bytes", limit, relative, size=size)
            return self.blobs.get(entry.blob)
        with self._dirs() as dirs:
            data = self._read_disk(dirs, relative, limit)
        return self._editor_text(relative, data)

    def _editor_text(self, relative: str, disk: bytes) -> bytes:
        """The editor's text of a file the plan has not written (its disk bytes are
        ``disk``), when there is an editor to ask and the file is text. Each file is
        asked once, and at most ``MAX_EDITOR_READS`` of them: an editor may open a
        buffer for each, and a search over a big tree must not open thousands."""
        with self._lock:
            if relative in self._read:
                return self._read[relative]
            if self._read_through is None or relative in self._asked or len(self._asked) >= MAX_EDITOR_READS:
                return disk
            self._asked.add(relative)
        if decode_text(disk) is None:
            return disk
        editor = self._read_through(relative)
        if editor is None or len(editor) > self.policy.max_read_bytes:
            return disk
        shown = editor_or_disk(disk, editor)
        if shown != disk:
            with self._lock:
                self._read[relative] = shown
        return shown

    def _read_disk(self, dirs: Dirs, relative: str, limit: int | None) -> bytes:
        """A workspace file, refused when it is no regular file or over ``limit``."""
        try:
            found = dirs.read(relative, limit=limit)
        except SymlinkInPath:
            raise _swapped(relative) from None
        except NotRegularFile:
            raise ValidationError(f"{relative} is not a regular file",
                                  {"path": relative, "reason": "not_a_regular_file"}) from None
        except TooLarge as too_large:
            raise _over("max_read_bytes", too_large.limit, relative, size=too_large.info.st_size) from None
        except IsADirectoryError as exc:
            raise IsADirectoryError(exc.errno, exc.strerror, relative) from None  # the relative path, not the server's
        except OSError as exc:  # a name the OS refuses, no permission: the caller's to read
            raise _unusable(relative, exc) from None
        if found is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", relative)
        return found[0]

    def exists(self, path: str) -> bool:
        return self.mode(path) is not None

    def mode(self, path: str) -> int | None:
        relative = self.resolve(path)
        with self._lock:
            entry = self._entries.get(relative)
        if entry is not None:
            return entry.mode
        with self._dirs() as dirs:
            return _mode_of(self._disk_stat(dirs, relative))

    def write_bytes(self, path: str, data: bytes, mode: int | None = None) -> None:
        if not isinstance(data, (bytes, bytearray)):
            raise ValidationError("data must be bytes", {"field": "data", "path": path})
        if mode is not None and (not isinstance(mode, int) or not 0 <= mode <= 0o777):
            raise ValidationError("mode must be permission bits (0 to 0o777)", {"field": "mode", "path": path})
        relative = self.resolve(path, write=True)
        with self._lock, self._dirs() as dirs:
            entry = self._entries.get(relative)
            self._check_budget(relative, entry, len(data))
            self._check_parents(dirs, relative)
            base, base_mode, disk_mode = self._first_touch(dirs, relative, entry)
            kept_mode = entry.mode if entry is not None and entry.mode is not None else disk_mode
            blob = self.blobs.put(bytes(data))
            written = (entry.written if entry else 0) + len(data)
            final_mode = mode if mode is not None else kept_mode if kept_mode is not None else NEW_FILE_MODE
            self._entries[relative] = OverlayRecord(relative, blob, final_mode, base, written, base_mode)
            self._written += len(data)

    def check_room(self, path: str, size: int) -> None:
        """The error ``write_bytes`` would raise for ``size`` bytes at ``path`` over the
        budget, raised before the bytes are read."""
        relative = self.resolve(path, write=True)
        with self._lock:
            self._check_budget(relative, self._entries.get(relative), size)

    def delete(self, path: str) -> None:
        relative = self.resolve(path, write=True)
        with self._lock, self._dirs() as dirs:
            entry = self._entries.get(relative)
            if (entry is None and not _is_file(self._disk_stat(dirs, relative))) or (entry is not None and entry.deleted):
                raise FileNotFoundError(2, "no such file", relative)
            self._check_budget(relative, entry, 0)
            base, base_mode, _ = self._first_touch(dirs, relative, entry)
            self._entries[relative] = OverlayRecord(relative, None, None, base, entry.written if entry else 0, base_mode)

    def glob(self, pattern: str) -> list[str]:
        """Files matching ``pattern`` in the merged view, sorted. ``**`` crosses
        directories, ``*`` does not; protected and secret paths are never listed,
        and directory symlinks are not followed."""
        normalized = normalize(self._relative(pattern))  # the results are guarded, not the pattern
        matches = compile_glob(normalized).fullmatch
        found = {path for path in self._walk(literal_prefix(normalized)) if matches(path)}
        with self._lock:
            for entry in self._entries.values():
                if entry.deleted:
                    found.discard(entry.path)
                elif matches(entry.path):
                    found.add(entry.path)
        return sorted(path for path in found if self.policy.refusal(path) is None)

    def files_below(self, directory: str) -> list[str]:
        """Every file at or below ``directory`` in the merged view (guarded or not:
        the caller decides), without following symlinks."""
        prefix = normalize(directory)
        found = set()
        top = os.path.join(self._real_root, prefix)
        if os.path.isfile(top) and not os.path.islink(top):
            found.add(prefix)
        for current, _, filenames in os.walk(top):
            relative_dir = Path(current).relative_to(self._real_root).as_posix()
            found.update(f"{relative_dir}/{name}" for name in filenames
                         if not os.path.islink(full := os.path.join(current, name)) and os.path.isfile(full))
        with self._lock:
            for entry in self._entries.values():
                if entry.path == prefix or entry.path.startswith(prefix + "/"):
                    (found.discard if entry.deleted else found.add)(entry.path)
        return sorted(found)

    # -- state -------------------------------------------------------------------

    @property
    def files_changed(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def bytes_written(self) -> int:
        with self._lock:
            return self._written

    def entries(self) -> list[OverlayRecord]:
        with self._lock:
            return sorted(self._entries.values(), key=lambda entry: entry.path)

    def changed_paths(self) -> list[str]:
        return [entry.path for entry in self.entries()]

    def to_records(self) -> list[OverlayRecord]:
        return self.entries()

    @classmethod
    def from_records(
        cls, root: Path, blobs: BlobStore, policy: GuardPolicy | None, records: Iterable[OverlayRecord],
        read_through: ReadThrough | None = None,
    ) -> Overlay:
        """The overlay the records were taken from; each path passes the guards again
        (the records were stored, and a store is input like any other)."""
        overlay = cls(root, blobs, policy, read_through)
        for index, record in enumerate(records):
            try:
                path = overlay.policy.check(record.path, write=True)
                entry = record if path == record.path and type(record.written) is int else OverlayRecord(
                    path, record.blob, record.mode, record.base, int(record.written), record.base_mode)
                permission_bits(entry.base_mode)
            except (TypeError, ValueError) as exc:
                raise ValidationError("malformed overlay record", {"field": "records", "index": index}) from exc
            overlay._entries[entry.path] = entry
            overlay._written += entry.written
        return overlay

    # -- rules -------------------------------------------------------------------

    def _check_budget(self, relative: str, entry: OverlayRecord | None, size: int) -> None:
        if entry is None and len(self._entries) >= self.policy.max_files_changed:
            raise _over("max_files_changed", self.policy.max_files_changed, relative)
        if self._written + size > self.policy.max_bytes_written:
            raise _over("max_bytes_written", self.policy.max_bytes_written, relative)

    def _check_parents(self, dirs: Dirs, relative: str) -> None:
        """Refuse a write that apply could not carry out: a file where a directory
        is, or a directory below a file the merged view still has."""
        info = self._disk_stat(dirs, relative)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise ValidationError("a directory is in the way", {"path": relative, "reason": "is_directory"})
        parts = relative.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            entry = self._entries.get(parent)
            if (entry is not None and not entry.deleted) or (entry is None and _is_file(self._disk_stat(dirs, parent))):
                raise ValidationError("a parent is a file", {"path": relative, "reason": "parent_is_file", "parent": parent})

    def _first_touch(self, dirs: Dirs, relative: str, entry: OverlayRecord | None) -> tuple[str | None, int | None, int | None]:
        """The entry's base digest and mode (kept from the first touch) and the disk
        file's mode. The base content goes into the blob store now, so an apply that
        finds the file unchanged already has its pre-image."""
        info = self._disk_stat(dirs, relative)
        if entry is None and info is not None and not stat.S_ISREG(info.st_mode):
            # Refused now, not only at the apply: a FIFO, a device, a directory or a link stays what it is.
            raise ValidationError(f"{relative} is not a regular file",
                                  {"path": relative, "reason": "not_a_regular_file"})
        disk_mode = _mode_of(info)
        if entry is not None:
            return entry.base, entry.base_mode, disk_mode
        if disk_mode is None:
            return None, None, None
        read = self._read.get(relative)  # the editor's text the plan read: what the write changes
        return self.blobs.put(read if read is not None else self._read_disk(dirs, relative, None)), disk_mode, disk_mode

    def _walk(self, prefix: list[str]) -> Iterable[str]:
        """Regular files on disk below the root, without entering protected or
        secret directories or following directory symlinks."""
        for directory, dirnames, filenames in os.walk(self._real_root):
            relative_dir = Path(directory).relative_to(self._real_root).as_posix()
            depth = 0 if relative_dir == "." else relative_dir.count("/") + 1
            base = "" if relative_dir == "." else relative_dir + "/"
            dirnames[:] = [
                name for name in dirnames
                if (depth >= len(prefix) or name == prefix[depth]) and self.policy.refusal(base + name) is None
            ]
            for name in filenames:
                full = os.path.join(directory, name)
                if os.path.islink(full) and not self._link_allowed(full):
                    continue
                if os.path.isfile(full):
                    yield base + name

    def _link_allowed(self, link: str) -> bool:
        real = os.path.realpath(link)
        return _inside(real, self._real_root) and self.policy.refusal(
            Path(real).relative_to(self._real_root).as_posix()) is None


def _inside(real: str, real_root: str) -> bool:
    return real.startswith(real_root + os.sep)


def _swapped(relative: str) -> AuthorizationError:
    """A directory on the resolved path became a symlink after it was resolved."""
    return AuthorizationError(f"path {relative!r} refused: symlink_escape", {"path": relative, "reason": "symlink_escape"})


def _unusable(relative: str, exc: OSError) -> ValidationError:
    return ValidationError(f"{relative}: {exc.strerror}", {
        "path": relative, "reason": "unusable_path", "errno": errno.errorcode.get(exc.errno or 0, "")})


def _mode_of(info: os.stat_result | None) -> int | None:
    return stat.S_IMODE(info.st_mode) if _is_file(info) else None


def _is_file(info: os.stat_result | None) -> TypeGuard[os.stat_result]:
    return info is not None and stat.S_ISREG(info.st_mode)


def _over(limit: str, maximum: int, path: str, **extra: int) -> BudgetExceededError:
    return BudgetExceededError(f"{limit} reached ({maximum})", {"limit": limit, "max": maximum, "path": path, **extra})
