"""The workspace as the plan service sees it (``app/workspace.py``): overlays, diffs,
journaled apply and rollback, and the blob store, for one workspace root."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from cleveragents.domain.guards import GuardPolicy
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.checkpoint import Checkpoint
from cleveragents.infra.workspace.diff import diff_overlay
from cleveragents.infra.workspace.journal import Applier
from cleveragents.infra.workspace.overlay import Overlay


class PlanWorkspace:
    def __init__(self, root: Path, state_dir: Path, policy: GuardPolicy | None = None, durable: bool = False):
        self._root = root
        self.root = str(root)
        self.policy = policy or GuardPolicy()
        self.blobs = BlobStore(state_dir / "blobs")
        self._applier = Applier(root, self.blobs, state_dir / "journal", durable=durable, policy=self.policy)

    def overlay(self, records: list[dict[str, Any]] | None = None) -> Overlay:
        if not records:
            return Overlay(self._root, self.blobs, self.policy)
        return Overlay.from_records(self._root, self.blobs, self.policy, records)

    def diff(self, overlay: Overlay, checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
        if checkpoint is None:
            return diff_overlay(overlay, self._root, self.blobs)
        restored = Checkpoint.from_dict(checkpoint)
        return diff_overlay(overlay, self._root, self.blobs, against=restored.pre_images(self.blobs),
                            against_modes=restored.pre_modes())

    def apply(self, plan_id: str, overlay: Overlay, force: bool) -> dict[str, Any]:
        return self._applier.apply(plan_id, overlay.entries(), force=force).to_dict()

    def rollback(self, checkpoint: dict[str, Any], force: bool) -> list[str]:
        return self._applier.rollback(Checkpoint.from_dict(checkpoint), force=force)

    def recover(self) -> list[dict[str, Any]]:
        return [{**asdict(report), "checkpoint": report.checkpoint.to_dict()} for report in self._applier.recover()]

    def discard(self, plan_id: str) -> None:
        self._applier.discard(plan_id)

    def put_blob(self, data: bytes) -> str:
        return self.blobs.put(data)

    def get_blob(self, digest: str) -> bytes:
        return self.blobs.get(digest)
