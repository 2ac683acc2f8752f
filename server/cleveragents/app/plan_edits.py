"""Writing a plan's files: by the server, or by the caller's editor.

When the caller's editor can make file changes (``CallContext.editor``), apply and
rollback send it the whole new text of every file instead of writing the disk, so
open buffers follow and the editor's undo works. The checkpoint is kept as for a
disk apply, so rollback works the same way. The journal records the change as made
by the editor before it is asked: a restart never moves those files (the editor
holds them, and the disk changes when it saves them: the VS Code extension saves at
once, Neovim leaves the buffers to the user). A change the editor cannot carry (a
file that is not UTF-8 text, a mode change) is written by the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from cleveragents.app.calls import Editor, FileChange
from cleveragents.app.workspace import PlanWorkspace
from cleveragents.domain.errors import PlanError
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord

SERVER, EDITOR = "server", "editor"
EDITOR_RESTART_REASON = ("the server stopped while the editor was making the {op}: the server changed no file; "
                         "the editor may hold the change in unsaved buffers")


async def apply_files(workspace: PlanWorkspace, plan_id: str, records: list[OverlayRecord], force: bool,
                      editor: Editor | None, label: str,
                      current: Mapping[str, bytes] | None = None) -> tuple[Checkpoint, str]:
    """Apply the overlay; returns the checkpoint and who wrote the files. ``current``:
    files as the caller's editor has them, checked instead of the disk."""

    def prepare() -> tuple[Checkpoint, list[dict[str, Any]] | None]:
        overlay = workspace.overlay(records)
        if editor is None:
            return workspace.apply(plan_id, overlay, force, current), None
        checkpoint = workspace.prepare_apply(plan_id, overlay, force, current)
        return checkpoint, workspace.editor_changes(checkpoint, "post")

    checkpoint, changes = await asyncio.to_thread(prepare)
    if editor is None:
        return checkpoint, SERVER
    if not changes or not editor.can_apply(_file_changes(changes)):
        return await asyncio.to_thread(
            lambda: workspace.apply(plan_id, workspace.overlay(records), force, current)), SERVER
    await _through_editor(workspace, editor, "apply", checkpoint, changes, label)
    return checkpoint, EDITOR


async def rollback_files(workspace: PlanWorkspace, checkpoint: Checkpoint, force: bool,
                         editor: Editor | None, label: str) -> tuple[list[str], str]:
    """Restore the checkpoint. Through the editor there is no conflict check: the
    disk may hold the applied text or not (unsaved buffers), so each file's whole text
    is replaced, and the editor's undo brings back what was there."""
    if editor is not None:
        changes = await asyncio.to_thread(workspace.editor_changes, checkpoint, "pre")
        if changes and editor.can_apply(_file_changes(changes)):
            await _through_editor(workspace, editor, "rollback", checkpoint, changes, label)
            return checkpoint.paths, EDITOR
    return await asyncio.to_thread(workspace.rollback, checkpoint, force), SERVER


async def _through_editor(workspace: PlanWorkspace, editor: Editor, op: str, checkpoint: Checkpoint,
                          changes: list[dict[str, Any]], label: str) -> None:
    plan_id = checkpoint.plan_id
    await asyncio.to_thread(workspace.begin_editor, op, checkpoint)
    try:
        applied, reason = await editor.apply_edit(label, _file_changes(changes))
    except Exception as exc:  # the transport failed to ask: nothing was changed
        applied, reason = False, f"the edit could not be sent ({type(exc).__name__})"
    await asyncio.to_thread(workspace.end_editor, plan_id, applied)
    if not applied:
        reason = reason or "no reason given"
        raise PlanError(f"the editor did not apply the {op}: {reason}",
                        {"plan_id": plan_id, "reason": reason, "written_by": EDITOR})


def _file_changes(changes: list[dict[str, Any]]) -> list[FileChange]:
    return [FileChange(change["path"], change["before"], change["after"]) for change in changes]
