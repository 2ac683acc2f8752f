"""Crash-safe apply and rollback of a plan's overlay.

Before any workspace file changes, every content both sides need is in the blob
store and a journal (``<journal_dir>/<plan_id>.json``, status "started") names the
files and their old and new states. Each file is then replaced whole (temp file +
rename). A crash at any point leaves a journal that ``recover()`` finishes (or
undoes) on the next start. The journal stays, status "done", until ``discard``, so
the caller can record the outcome in its own state first.

An editor can make the change instead (``begin_editor``/``end_editor``): the
journal then says "editor" and ``recover()`` never moves those files, since the
editor holds them (in buffers the user saves when they choose).

A journal is read back as untrusted input: before anything is written, every path
it names must pass the guards, and no directory on its way may be a symlink. One
that does not is not applied; it is reported "failed".

Conflicts: a file whose content or mode is no longer the one the plan started from
(the apply) or left (the rollback) is refused unless ``force``; the error's data
says which changed (``conflict_details``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cleveragents.domain.errors import (
    AuthorizationError,
    DomainError,
    PlanError,
    ValidationError,
)
from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.plan_files import Checkpoint, CheckpointEntry, OverlayRecord, Recovery
from cleveragents.ids import utc_now
from cleveragents.infra.workspace._dirfd import Dirs, SymlinkInPath
from cleveragents.infra.workspace._fs import (
    NotRegularFile,
    fsync_dir,
    remove_temp_files,
    write_atomic,
)
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.conflicts import conflicts_error, file_conflict
from cleveragents.infra.workspace.text import editor_or_disk

logger = logging.getLogger(__name__)

_PLAN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$")
# The side each operation moves the files to; undoing it moves them to the other.
_TARGET = {"apply": "post", "rollback": "pre"}
_OTHER = {"post": "pre", "pre": "post"}


class _FileFailed(Exception):
    def __init__(self, path: str, cause: OSError) -> None:
        super().__init__(path)
        self.path = path
        self.reason = "symlink_escape" if isinstance(cause, SymlinkInPath) else cause.strerror or type(cause).__name__


class _Walk(Dirs):
    """One operation's directories, and the paths that passed the guards in it."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.guarded: set[str] = set()


class Applier:
    """Applies and rolls back one workspace, one operation at a time. ``durable``
    also fsyncs every file and directory: without it a killed process still loses
    nothing (the kernel has the pages), only a power cut could.

    Every workspace file is reached through directory descriptors (``_dirfd.Dirs``),
    one set per operation, never through a symlink: a directory swapped for a link
    before the apply is refused (``symlink_escape``), and one swapped during it fails
    the apply, which is then undone through the directories it wrote in."""

    def __init__(
        self, root: Path, blobs: BlobStore, journal_dir: Path, durable: bool = False,
        policy: GuardPolicy | None = None,
    ) -> None:
        self.root = Path(root)
        self.blobs = blobs
        self.journal_dir = Path(journal_dir)
        self.durable = durable
        self.policy = policy or GuardPolicy()
        self._real_root = os.path.realpath(self.root)
        self._lock = threading.Lock()

    def _dirs(self) -> _Walk:
        """The directories of one operation: a new operation sees the disk as it is now."""
        return _Walk(self._real_root)

    # -- operations --------------------------------------------------------------

    def conflicts(self, entries: Iterable[OverlayRecord]) -> list[str]:
        """Paths whose content or mode on disk is no longer the one the plan started from."""
        with self._lock, self._dirs() as dirs:
            return [entry.path for entry in entries if self._conflict(dirs, entry.path, entry.base, entry.base_mode)]

    def apply(self, plan_id: str, entries: Iterable[OverlayRecord], *, force: bool = False,
              current: Mapping[str, bytes] | None = None) -> Checkpoint:
        """``current``: files as the caller's editor has them now (unsaved buffers), by
        path; they stand for the disk's content in the checks and the pre-images."""
        with self._lock, self._dirs() as dirs:
            checkpoint = self._prepare(dirs, plan_id, entries, force, current)
            self._run(dirs, "apply", checkpoint)
            return checkpoint

    def prepare(self, plan_id: str, entries: Iterable[OverlayRecord], *, force: bool = False,
                current: Mapping[str, bytes] | None = None) -> Checkpoint:
        """What ``apply`` checks and keeps (conflicts, pre-images), without writing a
        workspace file: for an editor to make the change."""
        with self._lock, self._dirs() as dirs:
            return self._prepare(dirs, plan_id, entries, force, current)

    def _prepare(self, dirs: _Walk, plan_id: str, entries: Iterable[OverlayRecord], force: bool,
                 current: Mapping[str, bytes] | None = None) -> Checkpoint:
        _check_plan_id(plan_id)
        self._refuse_unfinished(plan_id)
        entries = sorted(entries, key=lambda entry: entry.path)
        self._require_blobs(plan_id, [entry.blob for entry in entries if entry.blob])
        conflicts, planned, pre_images = [], [], []
        for entry in entries:
            data, mode = self._read(dirs, entry.path)
            if current is not None and data is not None and (editor := current.get(entry.path)) is not None:
                data = editor_or_disk(data, editor)
            digest = self._digest(data)
            if conflict := file_conflict(entry.path, entry.base, entry.base_mode, digest, mode):
                conflicts.append(conflict)
            post_mode = entry.mode
            if entry.blob is not None and mode is not None and entry.base_mode is not None and entry.mode == entry.base_mode:
                post_mode = mode  # the plan left the mode alone: a forced apply keeps the one the file has now
            if entry.blob == digest and (data is None or post_mode == mode):
                continue  # already so on disk
            planned.append(CheckpointEntry(
                entry.path, data is not None, digest, mode, entry.blob, None if entry.blob is None else post_mode,
            ))
            if data is not None:
                pre_images.append((data, digest))
        if conflicts and not force:
            raise conflicts_error("files changed on disk since execute", plan_id, conflicts)
        for data, digest in pre_images:
            self.blobs.put(data, digest=digest, durable=self.durable)
        created = self._dirs_to_create(dirs, [entry.path for entry in planned if entry.post_blob is not None])
        return Checkpoint(plan_id, utc_now(), tuple(planned), tuple(sorted(created)))

    def rollback(self, checkpoint: Checkpoint, *, force: bool = False) -> list[str]:
        """Restore every pre-image, bytes and mode, and delete the files the apply
        created. Refused when a file's content or mode changed since the apply, unless
        ``force``."""
        _check_plan_id(checkpoint.plan_id)
        with self._lock, self._dirs() as dirs:
            self._refuse_unfinished(checkpoint.plan_id)
            made = set(checkpoint.created_dirs)  # a deleted file that made way for a directory the apply made
            conflicts = [conflict for entry in checkpoint.entries
                         if not (entry.post_blob is None and entry.path in made)
                         and (conflict := self._conflict(dirs, entry.path, entry.post_blob, entry.post_mode))]
            if conflicts and not force:
                raise conflicts_error("files changed on disk since the apply", checkpoint.plan_id, conflicts)
            self._require_blobs(checkpoint.plan_id, [e.pre_blob for e in checkpoint.entries if e.existed and e.pre_blob])
            self._run(dirs, "rollback", checkpoint)
            return checkpoint.paths

    def begin_editor(self, op: str, checkpoint: Checkpoint) -> None:
        """Record that an editor is about to make ``op``'s change (before it is asked),
        so a restart knows not to move those files."""
        _check_plan_id(checkpoint.plan_id)
        with self._lock, self._dirs() as dirs:
            self._refuse_unfinished(checkpoint.plan_id)
            self._check_paths(dirs, checkpoint)
            record = {"op": op, "status": "editor", "checkpoint": checkpoint.to_dict()}
            self._write_journal(checkpoint.plan_id, record, sync=True)

    def end_editor(self, plan_id: str, applied: bool) -> None:
        """The editor answered: applied, the journal is done (until ``discard``);
        refused, nothing changed and the journal goes."""
        _check_plan_id(plan_id)
        with self._lock:
            if not applied:
                self._journal_path(plan_id).unlink(missing_ok=True)
                return
            record = json.loads(self._journal_path(plan_id).read_bytes())
            self._write_journal(plan_id, {**record, "status": "done", "outcome": "completed", "by": "editor"})

    def recover(self) -> list[Recovery]:
        """Finish or undo what a crash interrupted; report every journal still kept."""
        with self._lock:
            self.blobs.remove_temp_files()
            remove_temp_files(self.journal_dir)
            reports = []
            for path in sorted(self.journal_dir.glob("*.json")):
                with self._dirs() as dirs:
                    if report := self._recover(dirs, path):
                        reports.append(report)
            return reports

    def discard(self, plan_id: str) -> None:
        _check_plan_id(plan_id)
        self._journal_path(plan_id).unlink(missing_ok=True)

    # -- journal -----------------------------------------------------------------

    def _run(self, dirs: _Walk, op: str, checkpoint: Checkpoint) -> None:
        self._check_paths(dirs, checkpoint)
        target, other = _TARGET[op], _OTHER[_TARGET[op]]
        # Only directories missing now may be made: one that goes missing while the
        # files move was moved away (or is being swapped) and is not made again.
        missing = {side: self._missing_dirs(dirs, checkpoint, side) for side in (target, other)}
        record: dict[str, Any] = {"op": op, "status": "started", "checkpoint": checkpoint.to_dict()}
        self._write_journal(checkpoint.plan_id, record, sync=True)
        touched: set[str] = set()
        try:
            self._move(dirs, checkpoint, target, missing[target], touched=touched)
        except _FileFailed as failure:
            data = {"plan_id": checkpoint.plan_id, "op": op, "path": failure.path, "reason": failure.reason}
            try:
                # Only the files the failed move reached, through the directories it
                # reached them by (a name swapped for a link since leads nowhere else),
                # and of those only the ones changed: rewriting the others could fail
                # for the same reason (a full disk) and leave the plan stuck.
                self._move(dirs, checkpoint, other, missing[other], only=touched)
            except _FileFailed as again:
                raise PlanError(f"{op} failed; recover() will finish undoing it", data) from again
            self._write_journal(checkpoint.plan_id, {**record, "status": "done", "outcome": "undone"})
            raise PlanError(f"{op} failed and was undone", data) from None
        self._write_journal(checkpoint.plan_id, {**record, "status": "done", "outcome": "completed"})

    def _recover(self, dirs: _Walk, journal: Path) -> Recovery | None:
        try:
            record = json.loads(journal.read_bytes())
            op, checkpoint = record["op"], Checkpoint.from_dict(record["checkpoint"])
            target = _TARGET[op]
            if checkpoint.plan_id != journal.stem:  # the journal is rewritten under the plan's id
                raise ValueError("the journal's name and plan id differ")
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            logger.warning("unreadable journal %s left in place", journal.name)
            return None
        try:
            self._check_paths(dirs, checkpoint)
        except DomainError as exc:
            logger.error("journal %s not applied: %s", journal.name, exc)
            return Recovery(checkpoint.plan_id, op, "failed", checkpoint.paths, checkpoint, _error(exc.data))
        if record.get("status") == "editor":
            return Recovery(checkpoint.plan_id, op, "editor", checkpoint.paths, checkpoint)
        outcome = record.get("outcome", "completed")
        if record.get("status") != "done":
            try:
                # Fresh checks, not the memo: this is where a lost blob shows.
                needed = [blob for entry in checkpoint.entries if (blob := entry.state(target)[0])]
                if all(self.blobs.path(blob).is_file() for blob in needed):
                    outcome = "completed"
                else:
                    target, outcome = _OTHER[target], "undone"
                self._move(dirs, checkpoint, target, self._missing_dirs(dirs, checkpoint, target))
            except _FileFailed as failure:
                logger.warning("recovery of plan %s failed: %s: %s", checkpoint.plan_id, failure.path, failure.reason)
                return Recovery(checkpoint.plan_id, op, "failed", checkpoint.paths, checkpoint,
                                      {"path": failure.path, "reason": failure.reason})
            except DomainError as exc:
                logger.warning("recovery of plan %s failed: %s", checkpoint.plan_id, exc)
                return Recovery(checkpoint.plan_id, op, "failed", checkpoint.paths, checkpoint, _error(exc.data))
            self._write_journal(checkpoint.plan_id, {**record, "status": "done", "outcome": outcome})
        for directory in {path.rpartition("/")[0] for path in checkpoint.paths}:
            dirs.remove_temp_files(directory)
        return Recovery(checkpoint.plan_id, op, outcome, checkpoint.paths, checkpoint)

    def _journal_path(self, plan_id: str) -> Path:
        return self.journal_dir / f"{plan_id}.json"

    def _write_journal(self, plan_id: str, record: dict[str, Any], *, sync: bool = False) -> None:
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        data = json.dumps(record, separators=(",", ":")).encode()
        write_atomic(self._journal_path(plan_id), data, 0o600, durable=sync or self.durable)
        if self.durable:
            fsync_dir(self.journal_dir)

    def _refuse_unfinished(self, plan_id: str) -> None:
        try:
            record = json.loads(self._journal_path(plan_id).read_bytes())
        except (FileNotFoundError, ValueError):
            return
        if record.get("status") != "done":
            raise PlanError("an interrupted operation on this plan awaits recover()",
                            {"plan_id": plan_id, "op": record.get("op")})

    def _require_blobs(self, plan_id: str, digests: list[str]) -> None:
        missing = [digest for digest in digests if not self.blobs.has(digest)]
        if missing:
            raise PlanError("file contents missing from the blob store", {"plan_id": plan_id, "missing": missing})

    # -- files -------------------------------------------------------------------

    def _move(self, dirs: _Walk, checkpoint: Checkpoint, side: str, missing: set[str], *,
              touched: set[str] | None = None, only: set[str] | None = None) -> None:
        """Put every file of the checkpoint in its ``side`` state, making the
        directories of ``missing`` as needed. Deletions go first, so a deleted file
        can make way for a directory (and back). ``touched`` collects the paths whose
        directory was reached, before a change is made in it. ``only``: just those
        paths, and of them only the ones not in that state already."""
        states = [(entry.path, *entry.state(side)) for entry in checkpoint.entries if only is None or entry.path in only]
        changed: set[str] = set()
        for path, blob, _ in states:
            if blob is None:
                with _failing_as(path):
                    try:
                        fd, name = dirs.parent(path)
                    except NotADirectoryError:  # a file where its directory was: nothing to delete
                        continue
                    if fd is None:
                        continue
                    if touched is not None:
                        touched.add(path)
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=fd)
                changed.add(path.rpartition("/")[0])
        if side == "pre":
            for directory in sorted(checkpoint.created_dirs, reverse=True):
                with contextlib.suppress(OSError):  # gone already, or someone has put files in it since
                    dirs.rmdir(directory)
        for path, blob, mode in states:
            if blob is not None:
                if only is not None and self._is_in_state(dirs, path, blob, mode):
                    continue
                data = self.blobs.get(blob)
                with _failing_as(path):
                    fd, name = dirs.parent(path, create=missing)
                    if fd is None:
                        raise FileNotFoundError(errno.ENOENT, "its directory is gone", path)
                    if touched is not None:
                        touched.add(path)
                    write_atomic(name, data, 0o644 if mode is None else mode, durable=self.durable, dir_fd=fd)
                changed.add(path.rpartition("/")[0])
        if self.durable:
            for directory in changed:
                with contextlib.suppress(OSError):  # a rollback removed it
                    dirs.fsync(directory)

    def _guard(self, dirs: _Walk, path: str) -> None:
        if path not in dirs.guarded:
            if self.policy.check(path, write=True) != path:
                raise ValidationError("not a normalized workspace path", {"path": path, "reason": "not_normalized"})
            dirs.guarded.add(path)

    def _check_paths(self, dirs: _Walk, checkpoint: Checkpoint) -> None:
        """Refuse the whole checkpoint when one of its paths is refused, or when a
        directory on its way is now a symlink: before anything is written, so nothing
        is half done. The directories walked stay open for the operation."""
        for path in [*checkpoint.paths, *checkpoint.created_dirs]:
            self._guard(dirs, path)
            try:
                dirs.parent(path)
            except NotADirectoryError:
                pass  # a file where a directory was: the write fails, and is undone
            except SymlinkInPath:
                raise _link_refused(path) from None

    def _read(self, dirs: _Walk, path: str) -> tuple[bytes | None, int | None]:
        """The file's bytes and mode, or ``(None, None)`` when there is none. A
        symlink or a directory in its place is refused: it has no pre-image to keep."""
        self._guard(dirs, path)
        try:
            found = dirs.read(path)
        except (NotRegularFile, IsADirectoryError):
            raise _not_regular(path) from None
        except SymlinkInPath:
            raise _link_refused(path) from None
        if found is None:
            return None, None
        data, info = found
        return data, stat.S_IMODE(info.st_mode)

    def _conflict(self, dirs: _Walk, path: str, blob: str | None, mode: int | None) -> dict[str, Any] | None:
        data, found_mode = self._read(dirs, path)
        return file_conflict(path, blob, mode, self._digest(data), found_mode)

    def _is_in_state(self, dirs: _Walk, path: str, blob: str, mode: int | None) -> bool:
        try:
            data, current_mode = self._read(dirs, path)
        except (DomainError, OSError):  # unreadable, or not a regular file: not in that state
            return False
        return self._digest(data) == blob and (mode is None or current_mode == mode)

    def _digest(self, data: bytes | None) -> str | None:
        return None if data is None else self.blobs.digest_of(data)

    def _missing_dirs(self, dirs: _Walk, checkpoint: Checkpoint, side: str) -> set[str]:
        """The directories the files of ``side`` need that do not exist."""
        return self._dirs_to_create(dirs, [entry.path for entry in checkpoint.entries if entry.state(side)[0]])

    def _dirs_to_create(self, dirs: _Walk, paths: Iterable[str]) -> set[str]:
        """The directories ``paths`` need that are not there now: missing, or a file
        (that the plan deletes first, or the write fails). A symlink is refused."""
        exists: dict[str, bool] = {}
        for parent in {path.rpartition("/")[0] for path in paths}:
            parts, found = parent.split("/") if parent else [], True
            for depth in range(1, len(parts) + 1):
                directory = "/".join(parts[:depth])
                if directory not in exists:  # below a missing one, all are missing
                    exists[directory] = found and self._is_dir(dirs, directory)
                found = exists[directory]
        return {directory for directory, found in exists.items() if not found}

    def _is_dir(self, dirs: _Walk, directory: str) -> bool:
        try:
            info = dirs.lstat(directory)
        except SymlinkInPath:
            raise _link_refused(directory) from None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise _link_refused(directory)
        return info is not None and stat.S_ISDIR(info.st_mode)


def _link_refused(path: str) -> AuthorizationError:
    """A symlink on the way to ``path``, found before anything is written."""
    return AuthorizationError(f"path {path!r} refused: symlink_escape", {"path": path, "reason": "symlink_escape"})


@contextlib.contextmanager
def _failing_as(path: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _FileFailed(path, exc) from exc


def _error(data: dict[str, Any]) -> dict[str, Any]:
    """A refusal's reason and path for the report; an absolute path is left out."""
    error = {"reason": data.get("reason", "refused")}
    if isinstance(data.get("path"), str) and data.get("reason") != "absolute_path":
        error["path"] = data["path"]
    return error


def _not_regular(path: str) -> PlanError:
    return PlanError("not a regular file", {"path": path, "reason": "not_a_regular_file"})


def _check_plan_id(plan_id: str) -> None:
    if not isinstance(plan_id, str) or not _PLAN_ID.match(plan_id):
        raise ValidationError("invalid plan id", {"field": "plan_id"})
