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
it names must pass the guards and stay inside the workspace once symlinks are
resolved. One that does not is not applied; it is reported "failed".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleveragents.domain.errors import (
    AuthorizationError,
    DomainError,
    PlanError,
    ValidationError,
)
from cleveragents.domain.guards import GuardPolicy
from cleveragents.ids import utc_now
from cleveragents.infra.workspace._fs import (
    NotRegularFile,
    fsync_dir,
    read_regular,
    remove_temp_files,
    within,
    write_atomic,
)
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.checkpoint import Checkpoint, CheckpointEntry
from cleveragents.infra.workspace.overlay import OverlayEntry

logger = logging.getLogger(__name__)

_PLAN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$")
# The side each operation moves the files to; undoing it moves them to the other.
_TARGET = {"apply": "post", "rollback": "pre"}
_OTHER = {"post": "pre", "pre": "post"}


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """``outcome``: "completed" (the operation's result is on disk), "undone" (the
    files are as before it), "editor" (an editor was making the change when the
    process stopped: the files were left as they are) or "failed" (the journal
    stays for another try);
    ``error`` says why it failed (``reason`` and, when it names one, ``path``)."""

    plan_id: str
    op: str
    outcome: str
    paths: list[str]
    checkpoint: Checkpoint
    error: dict[str, Any] | None = None


class _FileFailed(Exception):
    def __init__(self, path: str, cause: OSError) -> None:
        super().__init__(path)
        self.path = path
        self.reason = cause.strerror or type(cause).__name__


class Applier:
    """Applies and rolls back one workspace, one operation at a time. ``durable``
    also fsyncs every file and directory: without it a killed process still loses
    nothing (the kernel has the pages), only a power cut could."""

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
        # Within one operation (under the lock) a path's place on disk is worked out once.
        self._real_dirs: dict[str, str] = {}
        self._targets: dict[str, str] = {}

    # -- operations --------------------------------------------------------------

    def conflicts(self, entries: Iterable[OverlayEntry]) -> list[str]:
        """Paths whose content on disk is no longer the one the plan started from."""
        with self._lock:
            self._forget_paths()
            return [entry.path for entry in entries if self._digest(self._read(entry.path)[0]) != entry.base]

    def apply(self, plan_id: str, entries: Iterable[OverlayEntry], *, force: bool = False) -> Checkpoint:
        with self._lock:
            checkpoint = self._prepare(plan_id, entries, force)
            self._run("apply", checkpoint)
            return checkpoint

    def prepare(self, plan_id: str, entries: Iterable[OverlayEntry], *, force: bool = False) -> Checkpoint:
        """What ``apply`` checks and keeps (conflicts, pre-images), without writing a
        workspace file: for an editor to make the change."""
        with self._lock:
            return self._prepare(plan_id, entries, force)

    def _prepare(self, plan_id: str, entries: Iterable[OverlayEntry], force: bool) -> Checkpoint:
        _check_plan_id(plan_id)
        self._forget_paths()
        self._refuse_unfinished(plan_id)
        entries = sorted(entries, key=lambda entry: entry.path)
        self._require_blobs(plan_id, [entry.blob for entry in entries if entry.blob])
        conflicts, planned, pre_images = [], [], []
        for entry in entries:
            data, mode = self._read(entry.path)
            digest = self._digest(data)
            if digest != entry.base:
                conflicts.append(entry.path)
            if entry.blob == digest and (data is None or entry.mode == mode):
                continue  # already so on disk
            planned.append(CheckpointEntry(
                entry.path, data is not None, digest, mode, entry.blob, None if entry.blob is None else entry.mode,
            ))
            if data is not None:
                pre_images.append((data, digest))
        if conflicts and not force:
            raise PlanError("files changed on disk since execute", {"plan_id": plan_id, "conflicts": conflicts})
        for data, digest in pre_images:
            self.blobs.put(data, digest=digest, durable=self.durable)
        return Checkpoint(plan_id, utc_now(), planned, self._dirs_to_create(planned))

    def rollback(self, checkpoint: Checkpoint, *, force: bool = False) -> list[str]:
        """Restore every pre-image, bytes and mode, and delete the files the apply
        created. Refused when a file changed since the apply, unless ``force``."""
        _check_plan_id(checkpoint.plan_id)
        with self._lock:
            self._forget_paths()
            self._refuse_unfinished(checkpoint.plan_id)
            conflicts = [entry.path for entry in checkpoint.entries
                         if self._digest(self._read(entry.path)[0]) != entry.post_blob]
            if conflicts and not force:
                raise PlanError("files changed on disk since the apply",
                                {"plan_id": checkpoint.plan_id, "conflicts": conflicts})
            self._require_blobs(checkpoint.plan_id, [e.pre_blob for e in checkpoint.entries if e.existed and e.pre_blob])
            self._run("rollback", checkpoint)
            return checkpoint.paths

    def begin_editor(self, op: str, checkpoint: Checkpoint) -> None:
        """Record that an editor is about to make ``op``'s change (before it is asked),
        so a restart knows not to move those files."""
        _check_plan_id(checkpoint.plan_id)
        with self._lock:
            self._forget_paths()
            self._refuse_unfinished(checkpoint.plan_id)
            self._check_paths(checkpoint)
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

    def recover(self) -> list[RecoveryReport]:
        """Finish or undo what a crash interrupted; report every journal still kept."""
        with self._lock:
            self._forget_paths()
            self.blobs.remove_temp_files()
            remove_temp_files(self.journal_dir)
            return [report for path in sorted(self.journal_dir.glob("*.json")) if (report := self._recover(path))]

    def discard(self, plan_id: str) -> None:
        _check_plan_id(plan_id)
        self._journal_path(plan_id).unlink(missing_ok=True)

    # -- journal -----------------------------------------------------------------

    def _run(self, op: str, checkpoint: Checkpoint) -> None:
        self._check_paths(checkpoint)
        record: dict[str, Any] = {"op": op, "status": "started", "checkpoint": checkpoint.to_dict()}
        self._write_journal(checkpoint.plan_id, record, sync=True)
        try:
            self._move(checkpoint, _TARGET[op])
        except _FileFailed as failure:
            data = {"plan_id": checkpoint.plan_id, "op": op, "path": failure.path, "reason": failure.reason}
            try:
                # Only the files the failed move changed: rewriting the others could
                # fail for the same reason (a full disk) and leave the plan stuck.
                self._move(checkpoint, _OTHER[_TARGET[op]], only_changed=True)
            except _FileFailed as again:
                raise PlanError(f"{op} failed; recover() will finish undoing it", data) from again
            self._write_journal(checkpoint.plan_id, {**record, "status": "done", "outcome": "undone"})
            raise PlanError(f"{op} failed and was undone", data) from None
        self._write_journal(checkpoint.plan_id, {**record, "status": "done", "outcome": "completed"})

    def _recover(self, journal: Path) -> RecoveryReport | None:
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
            self._check_paths(checkpoint)
        except DomainError as exc:
            logger.error("journal %s not applied: %s", journal.name, exc)
            return RecoveryReport(checkpoint.plan_id, op, "failed", checkpoint.paths, checkpoint, _error(exc.data))
        if record.get("status") == "editor":
            return RecoveryReport(checkpoint.plan_id, op, "editor", checkpoint.paths, checkpoint)
        outcome = record.get("outcome", "completed")
        if record.get("status") != "done":
            try:
                # Fresh checks, not the memo: this is where a lost blob shows.
                needed = [blob for entry in checkpoint.entries if (blob := entry.state(target)[0])]
                if all(self.blobs.path(blob).is_file() for blob in needed):
                    outcome = "completed"
                else:
                    target, outcome = _OTHER[target], "undone"
                self._move(checkpoint, target)
            except _FileFailed as failure:
                logger.warning("recovery of plan %s failed: %s: %s", checkpoint.plan_id, failure.path, failure.reason)
                return RecoveryReport(checkpoint.plan_id, op, "failed", checkpoint.paths, checkpoint,
                                      {"path": failure.path, "reason": failure.reason})
            except DomainError as exc:
                logger.warning("recovery of plan %s failed: %s", checkpoint.plan_id, exc)
                return RecoveryReport(checkpoint.plan_id, op, "failed", checkpoint.paths, checkpoint, _error(exc.data))
            self._write_journal(checkpoint.plan_id, {**record, "status": "done", "outcome": outcome})
        for directory in {os.path.dirname(path) for path in checkpoint.paths}:
            remove_temp_files(os.path.join(self._real_root, directory))
        return RecoveryReport(checkpoint.plan_id, op, outcome, checkpoint.paths, checkpoint)

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

    def _move(self, checkpoint: Checkpoint, side: str, only_changed: bool = False) -> None:
        """Put every file of the checkpoint in its ``side`` state. Deletions go
        first, so a deleted file can make way for a directory (and back).
        ``only_changed`` leaves a file alone that is in that state already."""
        states = [(entry.path, *entry.state(side)) for entry in checkpoint.entries]
        touched: set[str] = set()
        for path, blob, _ in states:
            if blob is None:
                with _failing_as(path), contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    os.unlink(self._target(path))
                touched.add(os.path.dirname(path))
        if side == "pre":
            for directory in sorted(checkpoint.created_dirs, reverse=True):
                try:
                    os.rmdir(os.path.join(self._real_root, directory))
                except OSError:
                    pass  # gone already, or someone has put files in it since
        for path, blob, mode in states:
            if blob is not None:
                if only_changed and self._is_in_state(path, blob, mode):
                    continue
                data = self.blobs.get(blob)
                with _failing_as(path):
                    self._write(self._target(path), data, mode)
                touched.add(os.path.dirname(path))
        if self.durable:
            for directory in touched:
                with contextlib.suppress(FileNotFoundError):  # a rollback removed it
                    fsync_dir(os.path.join(self._real_root, directory))

    def _write(self, target: str, data: bytes, mode: int | None) -> None:
        file_mode = 0o644 if mode is None else mode
        try:
            write_atomic(target, data, file_mode, durable=self.durable)
        except FileNotFoundError:  # its directory is new: make it only when needed
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_atomic(target, data, file_mode, durable=self.durable)

    def _check_paths(self, checkpoint: Checkpoint) -> None:
        """Refuse the whole checkpoint when one of its paths is refused: before
        anything is written, so nothing is half done."""
        for path in [*checkpoint.paths, *checkpoint.created_dirs]:
            self._target(path)

    def _forget_paths(self) -> None:
        """A new operation: the disk may have changed since the last one."""
        self._real_dirs.clear()
        self._targets.clear()

    def _target(self, path: str) -> str:
        """The file's place on disk. Refused: a path the guards refuse, one whose
        directories lead out of the workspace through a symlink, or into a place
        the guards refuse (``docs -> .git``)."""
        target = self._targets.get(path)
        if target is None:
            target = self._targets[path] = self._resolve(path)
        return target

    def _resolve(self, path: str) -> str:
        if self.policy.check(path, write=True) != path:
            raise ValidationError("not a normalized workspace path", {"path": path, "reason": "not_normalized"})
        parent, name = os.path.split(path)
        real_parent = self._real_dirs.get(parent)
        if real_parent is None:
            real = os.path.realpath(os.path.join(self._real_root, parent))
            if not within(real, self._real_root):
                raise AuthorizationError(f"path {path!r} refused: symlink_escape",
                                         {"path": path, "reason": "symlink_escape"})
            real_parent = self._real_dirs[parent] = os.path.relpath(real, self._real_root).replace(os.sep, "/")
        if real_parent != (parent or "."):
            self.policy.check(name if real_parent == "." else f"{real_parent}/{name}", write=True)
        return os.path.join(self._real_root, path)

    def _read(self, path: str) -> tuple[bytes | None, int | None]:
        """The file's bytes and mode, or ``(None, None)`` when there is none. A
        symlink or a directory in its place is refused: it has no pre-image to keep."""
        try:
            data, info = read_regular(self._target(path))
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        except (NotRegularFile, IsADirectoryError):
            raise _not_regular(path) from None
        return data, stat.S_IMODE(info.st_mode)

    def _is_in_state(self, path: str, blob: str, mode: int | None) -> bool:
        try:
            data, current_mode = self._read(path)
        except (DomainError, OSError):  # unreadable, or not a regular file: not in that state
            return False
        return self._digest(data) == blob and (mode is None or current_mode == mode)

    def _digest(self, data: bytes | None) -> str | None:
        return None if data is None else self.blobs.digest_of(data)

    def _dirs_to_create(self, planned: list[CheckpointEntry]) -> list[str]:
        exists: dict[str, bool] = {}
        for entry in planned:
            parts = entry.path.split("/")[:-1] if entry.post_blob is not None else []
            for depth in range(1, len(parts) + 1):
                directory = "/".join(parts[:depth])
                if directory not in exists:
                    exists[directory] = os.path.lexists(os.path.join(self._real_root, directory))
        return sorted(directory for directory, found in exists.items() if not found)


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
