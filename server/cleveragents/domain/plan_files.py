"""What a plan does to files: its overlay records, the checkpoint of an apply, and
the artifacts its steps make.

An overlay record is one file the plan wrote or deleted, kept so the overlay can be
stored and rebuilt after a restart; its content lives in the blob store. A checkpoint
says what an apply changed, precisely enough to undo it. Both are stored as the JSON
their ``to_dict`` gives, and ``from_dict`` checks that JSON field by field: a store
or a journal on disk is input like any other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cleveragents.domain.errors import ValidationError
from cleveragents.domain.records import record

DIGEST = re.compile(r"^[0-9a-f]{64}$")  # a blob's name: its sha256


@record
class OverlayRecord:
    """``blob`` is ``None`` for a deletion; ``base`` and ``base_mode`` are the workspace
    file's digest and permission bits when the plan first touched the path (``None``:
    it did not exist; ``base_mode`` is also ``None`` in records stored before it was
    kept, and then a mode change is not checked); ``written`` counts the bytes the
    plan wrote to it, so the budget survives a restart."""

    path: str
    blob: str | None
    mode: int | None
    base: str | None
    written: int = 0
    base_mode: int | None = None

    @property
    def deleted(self) -> bool:
        return self.blob is None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "blob": self.blob, "mode": self.mode, "base": self.base,
                "written": self.written, "base_mode": self.base_mode}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OverlayRecord:
        """``ValidationError`` when a field is missing or of the wrong kind."""
        try:
            path, written, base_mode = data["path"], data.get("written", 0), data.get("base_mode")
            if type(path) is not str:
                raise TypeError("path must be a string")
            if type(written) is not int:
                written = int(written)
            if base_mode is not None:
                permission_bits(base_mode)
            return cls(path, data["blob"], data["mode"], data["base"], written, base_mode)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValidationError("malformed overlay record", {"field": "records"}) from exc


@record
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

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "existed": self.existed, "pre_blob": self.pre_blob, "pre_mode": self.pre_mode,
                "post_blob": self.post_blob, "post_mode": self.post_mode}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CheckpointEntry:
        """``TypeError`` or ``ValueError`` when a field is missing or wrong."""
        entry = cls(**raw)
        if not isinstance(entry.path, str) or not isinstance(entry.existed, bool):
            raise TypeError("path must be a string and existed a boolean")
        for blob in (entry.pre_blob, entry.post_blob):
            if blob is not None and not (isinstance(blob, str) and DIGEST.match(blob)):
                raise ValueError("a blob must be a sha256 digest")
        for mode in (entry.pre_mode, entry.post_mode):
            permission_bits(mode)  # a workspace file may be setuid; never a file type
        return entry


@record
class Checkpoint:
    """``created_dirs`` are the directories the apply made, so a rollback can remove
    them again (when nothing else has been put in them)."""

    plan_id: str
    created_at: str
    entries: tuple[CheckpointEntry, ...]
    created_dirs: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        return [entry.path for entry in self.entries]

    def pre_modes(self) -> dict[str, int]:
        return {entry.path: entry.pre_mode for entry in self.entries if entry.pre_mode is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"plan_id": self.plan_id, "created_at": self.created_at,
                "entries": [entry.to_dict() for entry in self.entries], "created_dirs": list(self.created_dirs)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """The checkpoint a ``to_dict`` made; ``ValidationError`` when it is malformed.
        Whether its paths may be written is the applier's to decide, since that needs
        the root and the guards."""
        try:
            plan_id, created_at, entries = str(data["plan_id"]), str(data["created_at"]), data["entries"]
            created_dirs = tuple(data.get("created_dirs", ()))
            if not isinstance(entries, list) or not all(isinstance(path, str) for path in created_dirs):
                raise TypeError("entries must be a list and created_dirs strings")
        except (KeyError, TypeError) as exc:
            raise ValidationError("malformed checkpoint", {"field": "checkpoint"}) from exc
        checked = []
        for index, entry in enumerate(entries):
            try:
                checked.append(CheckpointEntry.from_dict(entry))
            except (TypeError, ValueError) as exc:
                raise ValidationError("malformed checkpoint entry", {"field": "checkpoint.entries", "index": index}) from exc
        return cls(plan_id, created_at, tuple(checked), created_dirs)


@record
class Recovery:
    """What start-up recovery did with a journal an interrupted apply or rollback left.

    ``outcome``: "completed" (the operation's result is on disk), "undone" (the files
    are as before it), "editor" (an editor was making the change when the process
    stopped: the files were left as they are) or "failed" (the journal stays for
    another try); ``error`` says why it failed (``reason`` and, when it names one,
    ``path``)."""

    plan_id: str
    op: str
    outcome: str
    paths: list[str]
    checkpoint: Checkpoint
    error: dict[str, Any] | None = None


@record
class PlanArtifact:
    """One artifact a step made; its bytes are the blob ``blob`` in the blob store."""

    artifact_id: str
    decision_id: str
    name: str
    media_type: str
    blob: str
    size: int
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return {"artifact_id": self.artifact_id, "decision_id": self.decision_id, "name": self.name,
                "media_type": self.media_type, "blob": self.blob, "size": self.size, "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanArtifact:
        return cls(data["artifact_id"], data["decision_id"], data["name"], data["media_type"], data["blob"],
                   data["size"], data["created_at"])


def permission_bits(mode: Any) -> int | None:
    """``mode`` when it is ``None`` or what ``stat.S_IMODE`` gives, else ``ValueError``."""
    if mode is None or (isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 0o7777):
        return mode
    raise ValueError("a mode must be permission bits")
