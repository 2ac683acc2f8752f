"""One A2A request on stdio, from its params to the bytes of its answer.

The pygls server (``server.py``) and the requests answered before it has loaded
(``early.py``) both answer through ``answer_call``, so an answer doesn't depend on
which of them took the request. Nothing here imports pygls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from cleveragents.a2a import envelope
from cleveragents.a2a.streams import call_notification
from cleveragents.transports.runtime import ServiceRuntime

Notify = Callable[[str, Any], None]
Attach = Callable[[Any, str, Any], None]  # (request id, subscription id, events)


async def cancel_and_wait(requests: Collection[asyncio.Future[Any]], timeout: float = 1.0) -> None:
    """Cancel ``requests`` and give them ``timeout`` seconds to end (their cleanup)."""
    for request in requests:
        request.cancel()
    if requests:
        await asyncio.wait(requests, timeout=timeout)


@dataclass(frozen=True, slots=True)
class Connection:
    """What ``initialize`` settled for the connection."""

    a2a_version: str | None = None
    extensions: tuple[str, ...] = ()


class WireResponse:
    """A complete JSON-RPC response, written as it is: a wire dict, or its UTF-8 JSON."""

    __slots__ = ("payload", "body")

    def __init__(self, payload: dict[str, Any] | None = None, *, body: bytes | None = None):
        self.payload = payload
        self.body = body


async def answer_call(runtime: ServiceRuntime, connection: Connection, method: str, params: Any, msg_id: Any, *,
                      notify: Notify, attach: Attach, editor: Any = None) -> WireResponse:
    from cleveragents.a2a.facade import CallContext

    try:
        facade = runtime.ready or await runtime.facade()
        context = CallContext(
            method=method, dialect="", request_id=msg_id, a2a_version=connection.a2a_version,
            extensions=connection.extensions, transport="stdio", notify=notify, cancel_ends_task=True,
            push=True, editor=editor,
        )
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {} if params is None else params}
        call = await facade.open(request, context)
        if call.response is None:  # each item a notification, then the last one answers
            async for item in call:
                notify(*call_notification(item, msg_id))
        elif call.follow is not None:
            attach(msg_id, call.follow_key or "", call.follow)
        return WireResponse(body=call.final_response().json_bytes())
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        # A refusal from starting the services (a bad config file) is the caller's to read.
        return WireResponse(envelope.failure(msg_id, exc, f"{method} (stdio transport)"))
