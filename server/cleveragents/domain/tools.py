"""What a tool is, and what it may touch while a plan runs.

A plan step calls a tool. The tool sees the workspace only through a
``WorkspaceView`` (the plan's overlay over the files on disk), so execution never
writes the workspace itself. Tools are synchronous: each call runs in a worker thread,
so blocking file I/O never reaches the event loop, and each has a time limit: its
context's ``deadline``, which the tool's loops check (``check_cancelled``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.errors import BudgetExceededError


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
    corrections and prompts given for this step.

    ``deadline`` is the ``time.monotonic()`` by which the call must be over (``None``:
    no limit), set by whoever runs the call from its ``time_limit`` in seconds. A tool
    checks it in its loops through ``check_cancelled``; one that waits on something
    else (a child process, a model) waits at most ``remaining()``."""

    view: WorkspaceView
    workspace: str
    cancelled: threading.Event = field(default_factory=threading.Event)
    actor: Any = None
    guidance: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    progress: Callable[[str], None] | None = None
    deadline: float | None = None
    time_limit: float | None = None
    tool: str = ""  # the name of the tool being called, for the time limit's error
    # Who asked for the execution (CallContext.caller): an actor's turn carries it.
    caller: CallerIdentity | None = None

    def check_cancelled(self) -> None:
        """``ToolCancelled`` once the call is cancelled, ``ToolTimeoutError`` once its
        deadline has passed."""
        if self.cancelled.is_set():
            raise ToolCancelled()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise self.timeout_error()

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never below 0), or ``None`` without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def start_clock(self, time_limit: float | None, tool: str = "") -> None:
        """Give the call ``time_limit`` seconds from now; a deadline already set (a
        step's, for the tools its actor calls) stays when it is sooner."""
        self.tool = tool or self.tool
        if time_limit is None:
            return
        deadline = time.monotonic() + time_limit
        if self.deadline is None or deadline < self.deadline:
            self.deadline, self.time_limit = deadline, time_limit

    def timeout_error(self) -> ToolTimeoutError:
        return ToolTimeoutError.of(self.tool, self.time_limit)


class ToolCancelled(Exception):
    """Raised inside a tool when its plan was cancelled."""


class ToolTimeoutError(BudgetExceededError):
    """A tool call ran past its time limit. ``data``: ``limit`` (``tool_timeout``),
    ``seconds`` (the limit) and ``tool``."""

    default_message = "Tool time limit exceeded"

    @classmethod
    def of(cls, tool: str, seconds: float | None) -> ToolTimeoutError:
        name = tool or "the tool"
        limit = f" of {seconds:g} s" if seconds is not None else ""
        return cls(f"{name} ran past its time limit{limit} (the tool_timeout setting)",
                   {"limit": "tool_timeout", "seconds": seconds, "tool": tool})


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
