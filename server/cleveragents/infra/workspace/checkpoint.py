"""What an apply changed, precisely enough to undo it: the checkpoint a plan keeps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cleveragents.domain.errors import ValidationError
from cleveragents.infra.workspace.blobs import DIGEST, BlobStore


@dataclass(frozen=True, slots=True)
class CheckpointEntry:
    """One file before (``existed``, ``pre_blob``, ``pre_mode``) and after the apply
    (``post_blob`` is ``None`` for a deletion)."""

    path: str
    existed: bool
    pre_blob: str | None
    pre_mode: int | None
    post_blob: str | None
    post_mode: int | None

    def state(self, side: str) -> tuple[str | None, int | None]:
        """``(blob, mode)`` of the file on the ``"pre"`` or ``"post"`` side."""
        if side == "pre":
            return (self.pre_blob, self.pre_mode) if self.existed else (None, None)
        return self.post_blob, self.post_mode


@dataclass(slots=True)
class Checkpoint:
    """``created_dirs`` are the directories the apply made, so a rollback can remove
    them again (when nothing else has been put in them)."""

    plan_id: str
    created_at: str
    entries: list[CheckpointEntry]
    created_dirs: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [entry.path for entry in self.entries]

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "created_at": self.created_at,
            "entries": [
                {"path": e.path, "existed": e.existed, "pre_blob": e.pre_blob, "pre_mode": e.pre_mode,
                 "post_blob": e.post_blob, "post_mode": e.post_mode}
                for e in self.entries
            ],
            "created_dirs": list(self.created_dirs),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """The checkpoint a ``to_dict`` made, checked field by field: a journal on
        disk is input like any other. Whether its paths may be written is the
        applier's to decide, since that needs the root and the guards."""
        try:
            plan_id, created_at, entries = str(data["plan_id"]), str(data["created_at"]), data["entries"]
            created_dirs = list(data.get("created_dirs", ()))
            if not isinstance(entries, list) or not all(isinstance(path, str) for path in created_dirs):
                raise TypeError("entries must be a list and created_dirs strings")
        except (KeyError, TypeError) as exc:
            raise ValidationError("malformed checkpoint", {"field": "checkpoint"}) from exc
        checked = []
        for index, entry in enumerate(entries):
            try:
                checked.append(_entry(entry))
            except (TypeError, ValueError) as exc:
                raise ValidationError("malformed checkpoint entry", {"field": "checkpoint.entries", "index": index}) from exc
        return cls(plan_id, created_at, checked, created_dirs)

    def pre_images(self, blobs: BlobStore) -> dict[str, bytes | None]:
        """Each path's content before the apply, as ``diff_overlay(against=...)`` takes it."""
        return {entry.path: blobs.get(entry.pre_blob) if entry.existed and entry.pre_blob else None
                for entry in self.entries}

    def pre_modes(self) -> dict[str, int]:
        return {entry.path: entry.pre_mode for entry in self.entries if entry.pre_mode is not None}


def _entry(raw: Mapping[str, Any]) -> CheckpointEntry:
    entry = CheckpointEntry(**raw)
    if not isinstance(entry.path, str) or not isinstance(entry.existed, bool):
        raise TypeError("path must be a string and existed a boolean")
    for blob in (entry.pre_blob, entry.post_blob):
        if blob is not None and not (isinstance(blob, str) and DIGEST.match(blob)):
            raise ValueError("a blob must be a sha256 digest")
    for mode in (entry.pre_mode, entry.post_mode):
        # What stat.S_IMODE gives (a workspace file may be setuid); never a file type.
        if mode is not None and (isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777):
            raise ValueError("a mode must be permission bits")
    return entry
