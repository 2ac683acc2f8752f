"""What the plan service needs from the workspace layer (``infra/workspace``).

Every method blocks on the disk; the plan service calls them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, Recovery
from cleveragents.domain.tools import WorkspaceView


class PlanOverlay(WorkspaceView, Protocol):
    def to_records(self) -> list[OverlayRecord]: ...


class PlanWorkspace(Protocol):
    root: str

    def overlay(self, records: list[OverlayRecord] | None = None,
                read_through: Callable[[str], bytes | None] | None = None) -> PlanOverlay:
        """A fresh overlay, or one rebuilt from stored records. ``read_through(path)``
        gives a file's text as the caller's editor has it (``None``: ask the disk); the
        overlay reads text files through it (called from worker threads)."""

    def diff(self, overlay: PlanOverlay, checkpoint: Checkpoint | None = None,
             current: Mapping[str, bytes] | None = None) -> dict[str, Any]:
        """The overlay against the workspace (``current``: files as the editor has them,
        by path, stand for the disk); after an apply, against the checkpoint's
        pre-images, so the change stays visible."""

    def apply(self, plan_id: str, overlay: PlanOverlay, force: bool,
              current: Mapping[str, bytes] | None = None) -> Checkpoint:
        """Write the overlay into the workspace; returns the checkpoint. ``current``
        stands for the disk in the conflict checks and the pre-images."""

    def rollback(self, checkpoint: Checkpoint, force: bool) -> list[str]: ...

    # An editor can make an apply's or a rollback's change instead (``CallContext.editor``).
    def prepare_apply(self, plan_id: str, overlay: PlanOverlay, force: bool,
                      current: Mapping[str, bytes] | None = None) -> Checkpoint:
        """The checks and the checkpoint of ``apply``, without writing a workspace file."""

    def editor_changes(self, checkpoint: Checkpoint, side: str) -> list[dict[str, Any]] | None:
        """``{path (absolute), before, after}`` texts (``None``: no file) to move every file
        to ``side`` ("post" | "pre"); ``None`` when an edit can't carry the change."""

    def begin_editor(self, op: str, checkpoint: Checkpoint) -> None:
        """Journal that an editor makes ``op``'s change; recovery leaves those files alone."""

    def end_editor(self, plan_id: str, applied: bool) -> None: ...

    def recover(self) -> list[Recovery]:
        """Journals an interrupted apply or rollback left: each completed or undone."""

    def discard(self, plan_id: str) -> None:
        """Forget the plan's journal (its state is stored)."""

    def put_blob(self, data: bytes) -> str: ...

    def get_blob(self, digest: str) -> bytes: ...
