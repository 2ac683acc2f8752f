"""CallContext: what a service may know about the call it is serving."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Notify = Callable[[str, dict[str, Any]], None]


@dataclass(slots=True)
class CallContext:
    """Built by the facade for each call; transports fill in what they can do.

    ``notify`` sends a notification to the caller (stdio, SSE); ``attach_stream``
    hands the transport an async iterable to pump after the response is sent. Both are
    ``None`` for in-process callers.
    """

    method: str
    dialect: str
    request_id: Any = None
    a2a_version: str | None = None
    transport: str = "in-process"
    progress_token: str | int | None = None
    notify: Notify | None = None
    attach_stream: Callable[[str, Any], None] | None = None
