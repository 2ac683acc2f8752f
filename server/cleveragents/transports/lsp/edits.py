"""Plan changes made by the client's editor: LSP ``workspace/applyEdit``.

The plan service hands over each file's whole new text (``app.calls.FileChange``);
this turns it into a WorkspaceEdit with ``documentChanges``: ``CreateFile`` then a
whole-text ``TextDocumentEdit`` for a new file, a whole-text edit for a changed one,
``DeleteFile`` for a removed one. A client that declares neither ``documentChanges``
nor resource operations (Neovim declares only the latter) gets a ``changes`` map,
which can change files but not create or delete them. The editor then changes its buffers (open or not)
and the disk changes when they are saved (by the VS Code extension at once, by the user in Neovim);
the editor's undo takes the change back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types

logger = logging.getLogger(__name__)

EDIT_TIMEOUT_SECONDS = 120.0
# The edit replaces a document's whole text, whatever the buffer holds now (it may
# differ from the disk): an end past the last line is clamped to the document's end
# by clients (Neovim, VS Code), so no stale tail is left behind.
_WHOLE_TEXT = types.Range(start=types.Position(line=0, character=0),
                          end=types.Position(line=2**31 - 1, character=0))


def client_can_edit(capabilities: types.ClientCapabilities | None) -> bool:
    """The client declared ``workspace.applyEdit``."""
    workspace = capabilities.workspace if capabilities is not None else None
    return bool(workspace is not None and workspace.apply_edit)


class LspEditor:
    """Implements ``app.calls.Editor`` over a pygls server's connection."""

    def __init__(self, server: Any, timeout: float = EDIT_TIMEOUT_SECONDS):
        self._language_server = server
        self._timeout = timeout
        edit = server.client_capabilities.workspace.workspace_edit
        self._operations = {str(getattr(op, "value", op)) for op in (edit.resource_operations or ())} if edit else set()
        # Resource operations exist only inside documentChanges: declaring them implies it.
        self._document_changes = bool(edit is not None and (edit.document_changes or self._operations))

    def can_apply(self, changes: Sequence[Any]) -> bool:
        needed = {"create" for c in changes if c.before is None} | {"delete" for c in changes if c.after is None}
        return needed <= (self._operations if self._document_changes else set())

    async def apply_edit(self, label: str, changes: Sequence[Any]) -> tuple[bool, str | None]:
        params = types.ApplyWorkspaceEditParams(edit=workspace_edit(changes, self._document_changes), label=label)
        try:
            result = await asyncio.wait_for(self._language_server.workspace_apply_edit_async(params), self._timeout)
        except asyncio.TimeoutError:
            return False, f"the editor did not answer within {self._timeout:g} s (it may still apply the edit)"
        except Exception as exc:  # an error response, or the connection is gone
            logger.warning("workspace/applyEdit failed: %s", exc)
            return False, f"the editor answered with an error: {exc}"
        applied = result.get("applied") if isinstance(result, dict) else getattr(result, "applied", False)
        reason = result.get("failureReason") if isinstance(result, dict) else getattr(result, "failure_reason", None)
        return bool(applied), (None if applied else reason or "the editor refused the edit")


def workspace_edit(changes: Sequence[Any], document_changes: bool = True) -> types.WorkspaceEdit:
    if not document_changes:
        return types.WorkspaceEdit(changes={
            Path(c.path).as_uri(): [types.TextEdit(range=_WHOLE_TEXT, new_text=c.after)] for c in changes})
    operations: list[Any] = []
    for change in changes:
        uri = Path(change.path).as_uri()
        if change.after is None:
            operations.append(types.DeleteFile(uri=uri, options=types.DeleteFileOptions(ignore_if_not_exists=True)))
            continue
        if change.before is None:
            operations.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
        operations.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
            edits=[types.TextEdit(range=_WHOLE_TEXT, new_text=change.after)],
        ))
    return types.WorkspaceEdit(document_changes=operations)
