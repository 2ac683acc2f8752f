"""The workspace as the plan service sees it (``app/workspace.py``): overlays, diffs,
journaled apply and rollback, and the blob store, for one workspace root."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, Recovery
from cleveragents.domain.tools import WorkspaceView
from cleveragents.infra.workspace._dirfd import Dirs
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.checkpoint import pre_images
from cleveragents.infra.workspace.diff import diff_overlay
from cleveragents.infra.workspace.journal import Applier
from cleveragents.infra.workspace.overlay import NEW_FILE_MODE, Overlay, ReadThrough
from cleveragents.infra.workspace.text import editor_or_disk


def _made_here(view: WorkspaceView) -> Overlay:
    """The overlay given back, which ``overlay()`` made: the port takes any view, and
    only this module's overlays carry the entries an apply and a diff read."""
    if isinstance(view, Overlay):
        return view
    raise TypeError(f"not an overlay of a plan workspace: {type(view).__name__}")


class PlanWorkspace:
    def __init__(self, root: Path, state_dir: Path, policy: GuardPolicy | None = None, durable: bool = False):
        self._root = root
        self._real_root = os.path.realpath(root)
        self.root = str(root)
        self.policy = policy or GuardPolicy()
        self.blobs = BlobStore(state_dir / "blobs")
        self._applier = Applier(root, self.blobs, state_dir / "journal", durable=durable, policy=self.policy)

    def overlay(self, records: list[OverlayRecord] | None = None, read_through: ReadThrough | None = None) -> Overlay:
        if not records:
            return Overlay(self._root, self.blobs, self.policy, read_through)
        return Overlay.from_records(self._root, self.blobs, self.policy, records, read_through)

    def diff(self, view: WorkspaceView, checkpoint: Checkpoint | None = None,
             current: Mapping[str, bytes] | None = None) -> dict[str, Any]:
        overlay = _made_here(view)
        if checkpoint is None:
            against = self._as_editor_has_them(current) if current else None
            return diff_overlay(overlay, self._root, self.blobs, against=against)
        return diff_overlay(overlay, self._root, self.blobs, against=pre_images(checkpoint, self.blobs),
                            against_modes=checkpoint.pre_modes())

    def _as_editor_has_them(self, current: Mapping[str, bytes]) -> dict[str, bytes | None]:
        """The files an editor has (``current``) as the diff's old side, where they exist
        on disk (a buffer differing only in line endings keeps the disk's bytes)."""
        against: dict[str, bytes | None] = {}
        with Dirs(self._real_root) as dirs:
            for path, editor in current.items():
                try:
                    found = dirs.read(path)
                except (OSError, ValueError):
                    continue
                if found is not None:
                    against[path] = editor_or_disk(found[0], editor)
        return against

    def apply(self, plan_id: str, view: WorkspaceView, force: bool,
              current: Mapping[str, bytes] | None = None) -> Checkpoint:
        return self._applier.apply(plan_id, _made_here(view).entries(), force=force, current=current)

    def rollback(self, checkpoint: Checkpoint, force: bool) -> list[str]:
        return self._applier.rollback(checkpoint, force=force)

    # -- changes an editor makes ---------------------------------------------------
    def prepare_apply(self, plan_id: str, view: WorkspaceView, force: bool,
                      current: Mapping[str, bytes] | None = None) -> Checkpoint:
        return self._applier.prepare(plan_id, _made_here(view).entries(), force=force, current=current)

    def editor_changes(self, checkpoint: Checkpoint, side: str) -> list[dict[str, Any]] | None:
        """Each file's text now and on ``side`` ("post": after the apply, "pre": before
        it). ``None`` when an editor can't make the change: a file is not UTF-8 text,
        or its mode would change (an edit carries text only)."""
        other = "pre" if side == "post" else "post"
        changes = []
        for entry in checkpoint.entries:
            (now, now_mode), (new, new_mode) = entry.state(other), entry.state(side)
            if new is not None and new_mode != (now_mode if now is not None else NEW_FILE_MODE):
                return None
            try:
                texts = [None if blob is None else self.blobs.get(blob).decode("utf-8") for blob in (now, new)]
            except UnicodeDecodeError:
                return None
            changes.append({"path": os.path.join(self.root, entry.path), "before": texts[0], "after": texts[1]})
        return changes

    def begin_editor(self, op: str, checkpoint: Checkpoint) -> None:
        self._applier.begin_editor(op, checkpoint)

    def end_editor(self, plan_id: str, applied: bool) -> None:
        self._applier.end_editor(plan_id, applied)

    def recover(self) -> list[Recovery]:
        return self._applier.recover()

    def discard(self, plan_id: str) -> None:
        self._applier.discard(plan_id)

    def put_blob(self, data: bytes) -> str:
        return self.blobs.put(data)

    def get_blob(self, digest: str) -> bytes:
        return self.blobs.get(digest)
