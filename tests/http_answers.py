"""Reading a JSON-RPC answer over HTTP the way a client does: a streaming method answers
with an event stream even when it refuses the call at once (its one event is the error)."""

from __future__ import annotations

import json
from typing import Any

import httpx


def jsonrpc_answer(response: httpx.Response) -> dict[str, Any]:
    """The response's JSON-RPC message: its body, or its event stream's first event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                return json.loads(line[len("data:"):])
        raise AssertionError(f"an event stream without an event: {response.text[:300]!r}")
    return response.json()
