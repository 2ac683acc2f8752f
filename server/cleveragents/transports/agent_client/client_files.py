"""Files through the ACP client. Plan changes are written by it (``fs/write_text_file``)
when it declares ``fs.writeTextFile``: the editor's buffers follow, and it may show or
save them. Files are read through it (``fs/read_text_file``) when it declares
``fs.readTextFile``: a plan then works on the editor's unsaved buffers.

Implements ``app.calls.Editor``, as LSP's ``workspace/applyEdit`` does: the plan
service keeps the checkpoint and the journal either way, so ``/rollback`` works.
ACP can write a file (creating it) but not delete one; a change that deletes a file
is written by the server instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from cleveragents.transports.agent_client.wire import AgentClientError, Connection

WRITE_TIMEOUT_SECONDS = 120.0


def client_writes_files(capabilities: dict[str, Any]) -> bool:
    fs = capabilities.get("fs")
    return isinstance(fs, dict) and fs.get("writeTextFile") is True


def client_reads_files(capabilities: dict[str, Any]) -> bool:
    fs = capabilities.get("fs")
    return isinstance(fs, dict) and fs.get("readTextFile") is True


class ClientFiles:
    def __init__(self, connection: Connection, session_id: str, timeout: float = WRITE_TIMEOUT_SECONDS):
        self._connection = connection
        self._session_id = session_id
        self._timeout = timeout

    def can_apply(self, changes: Sequence[Any]) -> bool:
        return all(change.after is not None for change in changes)

    async def apply_edit(self, label: str, changes: Sequence[Any]) -> tuple[bool, str | None]:
        for written, change in enumerate(changes):
            try:
                await asyncio.wait_for(self._connection.request("fs/write_text_file", {
                    "sessionId": self._session_id, "path": str(change.path), "content": change.after}), self._timeout)
            except (AgentClientError, TimeoutError) as exc:
                why = exc.message if isinstance(exc, AgentClientError) else f"no answer within {self._timeout:g} s"
                done = f"; it wrote {written} of {len(changes)} files first" if written else ""
                return False, f"the editor did not write {change.path}: {why}{done}"
        return True, None

    async def read_text(self, path: str) -> str | None:
        """``app.calls.FileReader``: the editor's text of ``path``, or ``None`` when it
        refuses (no such file, not text) or gives no answer in time."""
        try:
            answer = await asyncio.wait_for(self._connection.request("fs/read_text_file", {
                "sessionId": self._session_id, "path": path}), self._timeout)
        except (AgentClientError, TimeoutError):
            return None
        content = answer.get("content") if isinstance(answer, dict) else None
        return content if isinstance(content, str) else None
