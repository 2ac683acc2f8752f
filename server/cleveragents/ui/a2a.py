"""A2A for the user-facing side: ``A2A`` (serve an agent) and ``A2AClient`` (call one).

``A2A`` is the server side and brings no HTTP client with it; ``A2AClient`` is loaded
the first time it is named here (``from cleveragents.ui.a2a import A2AClient``), so a
server that never calls out never imports it. Both are also in ``cleveragents``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cleveragents.publish.server import A2A

if TYPE_CHECKING:
    from cleveragents import A2AClient

__all__ = ["A2A", "A2AClient"]


def __getattr__(name: str) -> Any:
    if name == "A2AClient":
        import cleveragents  # its lazy attribute: the client's module loads here, once

        client = cleveragents.A2AClient
        globals()[name] = client
        return client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
