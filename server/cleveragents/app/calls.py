"""CallContext: what a service may know about the call it is serving."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cleveragents.domain.actor import ToolInfo, ToolInvoker
from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.errors import AuthorizationError

Notify = Callable[[str, dict[str, Any]], None]
# Told as each plan step starts and ends (``{"event": "started" | "ended", ...}``, see
# ``progress.Progress.step_started``), on the event loop: a client that shows a plan live.
StepListener = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's whole text before and after (``None``: no such file), by absolute path."""

    path: str
    before: str | None
    after: str | None


class Editor(Protocol):
    """The caller's editor, when it can make file changes itself (LSP
    ``workspace/applyEdit``): open buffers follow and the editor's undo works."""

    def can_apply(self, changes: Sequence[FileChange]) -> bool:
        """Whether the editor supports every kind of change (creating, deleting files)."""

    async def apply_edit(self, label: str, changes: Sequence[FileChange]) -> tuple[bool, str | None]:
        """``(applied, reason)``: ``reason`` says why the editor did not apply it."""


class CallerTools(Protocol):
    """Tools the caller brings for the turns it starts (an ACP client's MCP servers),
    offered to the actor beside the backend's own."""

    def infos(self) -> Sequence[Mapping[str, Any]]:
        """The tools, each ``{"name", "description", "input_schema"}`` (a JSON schema)."""

    async def invoke(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Runs one of them; the result as the actor reads it (``summary`` and more).
        A refusal is a ``StructuredError``, as for the backend's own tools."""


class FileReader(Protocol):
    """The caller's editor, when it reads files for the agent (ACP ``fs/read_text_file``):
    a plan then sees its unsaved buffers."""

    async def read_text(self, path: str) -> str | None:
        """The editor's text of ``path`` (absolute); ``None`` when it has none to give."""


@dataclass(slots=True)
class CallContext:
    """Built by the facade for each call; transports fill in what they can do.

    ``notify`` sends a notification to the caller (stdio, in-process callers);
    ``push`` says the transport sends a live stream after the response (a
    subscription's events); ``attach_stream`` is how an in-process caller of
    ``respond`` takes such a stream; ``editor`` makes plan changes through the
    client's editor; ``reader`` reads files through it (``FileReader``); ``on_step``
    hears each plan step start and end; ``caller`` is who is calling. All are unset for
    in-process callers.
    """

    method: str
    dialect: str
    request_id: Any = None
    a2a_version: str | None = None
    transport: str = "in-process"
    progress_token: str | int | None = None
    notify: Notify | None = None
    attach_stream: Callable[[str, Any], None] | None = None
    push: bool = False
    editor: Editor | None = None
    tools: CallerTools | None = None  # offered to the actor of a message this call sends
    on_step: StepListener | None = None
    reader: FileReader | None = None
    # A cancelled request cancels the task its stream follows. Over stdio the stream is
    # the editor's own (its Cancel is $/cancelRequest); over HTTP a dropped stream
    # leaves the task running, for the client to subscribe to again.
    cancel_ends_task: bool = False
    # A2A extensions: the uris the transport says the client activates (a header, the
    # connection's), and those of them the agent supports, set by the facade for the echo.
    extensions: tuple[str, ...] = ()
    activated_extensions: tuple[str, ...] = ()
    # The caller's W3C Trace Context headers (traceparent, tracestate), when tracing is on.
    trace_headers: dict[str, str] | None = None
    # Who is calling, when the transport authenticated the call (HTTP with credentials):
    # an OAuth2 token's subject, client and scopes, or the configured secret's scheme.
    caller: CallerIdentity | None = None


def offered_tools(own: tuple[ToolInfo, ...], base: ToolInvoker | None,
                  caller: CallerTools | None) -> tuple[tuple[ToolInfo, ...], ToolInvoker | None]:
    """The tools a turn offers, and what invokes them: the backend's (``own``, through
    ``base``), and those its caller brings, which win a clash of names (the caller
    chose them for this turn)."""
    brought = tuple(ToolInfo(str(i["name"]), str(i.get("description", "")), dict(i.get("input_schema") or {}))
                    for i in (caller.infos() if caller is not None else ()))
    if caller is None or not brought:
        return own, base
    names = {info.name for info in brought}

    async def invoke(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if name in names:
            return await caller.invoke(name, arguments)
        if base is None:
            raise AuthorizationError(f"{name} is not available to this actor here",
                                     {"tool": name, "available": sorted(names)})
        return await base(name, arguments)

    return tuple(i for i in own if i.name not in names) + brought, invoke
