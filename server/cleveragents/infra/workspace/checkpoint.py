"""What an apply changed, precisely enough to undo it: the checkpoint a plan keeps
(``domain.plan_files``), and the file contents it names, from the blob store."""

from __future__ import annotations

from cleveragents.domain.plan_files import Checkpoint, CheckpointEntry
from cleveragents.infra.workspace.blobs import BlobStore

__all__ = ["Checkpoint", "CheckpointEntry", "pre_images"]


def pre_images(checkpoint: Checkpoint, blobs: BlobStore) -> dict[str, bytes | None]:
    """Each path's content before the apply, as ``diff_overlay(against=...)`` takes it."""
    return {entry.path: blobs.get(entry.pre_blob) if entry.existed and entry.pre_blob else None
            for entry in checkpoint.entries}
