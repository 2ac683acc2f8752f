"""What a tool is, and what it may touch while a plan runs.

A plan step calls a tool. The tool sees the workspace only through a
``WorkspaceView`` (the plan's overlay over the files on disk), so execution never
writes the workspace itself. Tools are synchronous: the plan service runs each call
in a worker thread, so blocking file I/O never reaches the event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class WorkspaceView(Protocol):
    """Paths are workspace-relative POSIX strings. Every method checks the guards
    (``domain.guards``) and raises ``AuthorizationError`` for a refused path, or
    ``BudgetExceededError`` when a limit is reached."""

    def read_bytes(self, path: str) -> bytes:
        """The overlay's version if the plan wrote the file, else the file on disk.
        ``FileNotFoundError`` when neither has it (or the plan deleted it)."""

    def exists(self, path: str) -> bool: ...

    def mode(self, path: str) -> int | None:
        """The file's permission bits, or ``None`` when it does not exist."""

    def glob(self, pattern: str) -> list[str]:
        """Files matching ``pattern`` (``**`` crosses directories) in the merged view,
        sorted; protected paths are never listed."""

    def write_bytes(self, path: str, data: bytes, mode: int | None = None) -> None:
        """Record a write in the overlay; the workspace is not touched."""

    def delete(self, path: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Artifact:
    """Output a step produced (a command's log, a report): kept with the plan."""

    name: str
    data: bytes
    media_type: str = "text/plain"


@dataclass(slots=True)
class ToolResult:
    output: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)


@dataclass(slots=True)
class ToolContext:
    """What a tool call may use. ``actor`` is the session's actor when a step asks
    it for edits (the actors work); ``None`` otherwise. ``guidance`` holds the
    corrections and prompts given for this step."""

    view: WorkspaceView
    workspace: str
    cancelled: threading.Event = field(default_factory=threading.Event)
    actor: Any = None
    guidance: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    progress: Callable[[str], None] | None = None

    def check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise ToolCancelled()


class ToolCancelled(Exception):
    """Raised inside a tool when its plan was cancelled."""


class Tool(Protocol):
    name: str  # `namespace.verb`, e.g. `fs.replace`
    description: str

    @property
    def namespace(self) -> str: ...

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Checked, defaulted arguments; ``ValidationError`` naming the bad fields."""

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult: ...
