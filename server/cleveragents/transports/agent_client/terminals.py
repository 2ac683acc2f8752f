"""A command step's output in a client terminal (ACP ``terminal/*``), when the client
declares ``terminal``.

ACP's terminals run a command on the client's side, and a ``terminal`` tool-call
content shows one of those. Our commands never run there: ``shell.run`` runs in the
plan's own confinement (its sandbox, its policy, its time limit), and only its
captured output is handed over. The terminal the client opens runs a display
command: this server's own Python interpreter writing that text back, so the
editor shows it in its terminal view. A client that refuses the terminal gets the
text as plain tool-call content instead.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from cleveragents.transports.agent_client.wire import AgentClientError, Connection

logger = logging.getLogger("cleveragents.agent_client")

MAX_SHOWN_CHARS = 16_000  # the tail of a command's output a terminal shows (it goes on a command line)
EXIT_WAIT_SECONDS = 30.0
_DISPLAY = "import sys; sys.stdout.write(sys.argv[1]); sys.stdout.flush()"


def client_has_terminals(capabilities: dict[str, Any]) -> bool:
    return capabilities.get("terminal") is True


def shown_tail(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"[... {len(text) - MAX_SHOWN_CHARS} characters before]\n" + text[-MAX_SHOWN_CHARS:]


class Terminals:
    """Client terminals of one session, each showing a text."""

    def __init__(self, connection: Connection, session_id: str, cwd: Path):
        self._connection = connection
        self._session_id = session_id
        self._cwd = cwd

    async def open(self, text: str) -> str | None:
        """A terminal that shows ``text``: its id, or ``None`` when the client refused one."""
        try:
            created = await asyncio.wait_for(self._connection.request("terminal/create", {
                "sessionId": self._session_id, "command": sys.executable, "args": ["-c", _DISPLAY, shown_tail(text)],
                "cwd": str(self._cwd), "outputByteLimit": 4 * MAX_SHOWN_CHARS}), EXIT_WAIT_SECONDS)
        except (AgentClientError, TimeoutError) as exc:
            logger.info("the client opened no terminal: %s", getattr(exc, "message", "no answer"))
            return None
        terminal_id = created.get("terminalId") if isinstance(created, dict) else None
        return terminal_id if isinstance(terminal_id, str) and terminal_id else None

    async def close(self, terminal_id: str) -> None:
        """Wait for the display to end, then release the terminal (the client keeps
        showing a released terminal's output in the tool call)."""
        params = {"sessionId": self._session_id, "terminalId": terminal_id}
        try:
            await asyncio.wait_for(self._connection.request("terminal/wait_for_exit", params), EXIT_WAIT_SECONDS)
        except (AgentClientError, TimeoutError):
            pass  # released anyway: the release kills what still runs
        try:
            await asyncio.wait_for(self._connection.request("terminal/release", params), EXIT_WAIT_SECONDS)
        except (AgentClientError, TimeoutError) as exc:
            logger.info("the client did not release terminal %s: %s", terminal_id, getattr(exc, "message", "no answer"))
