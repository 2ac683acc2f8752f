"""The JSON media types of the A2A HTTP bindings, and which one an answer carries.

A2A 1.0.0 says ``application/json`` for HTTP requests and responses; 1.0.1 says
``application/a2a+json`` SHOULD be used. Clients of both exist, and some check for
``application/json``. So every JSON answer (results and errors, JSON-RPC and
HTTP+JSON) is ``application/a2a+json`` when the request's ``Accept`` names it (and
does not prefer ``application/json``), and ``application/json`` otherwise. Requests
may say either (``jsonrpc.is_json``).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

JSON = "application/json"
A2A_JSON = "application/a2a+json"
_NAMED = b"a2a+json"


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def answer_type(accept: str | None) -> str:
    """The media type to answer a request whose ``Accept`` header is ``accept``."""
    if not accept or "a2a+json" not in accept.lower():  # the common case, without parsing
        return JSON
    a2a = plain = -1.0
    for item in accept.split(","):
        name, *params = item.split(";")
        name = name.strip().lower()
        if name == A2A_JSON:
            a2a = max(a2a, _quality(params))
        elif name == JSON:
            plain = max(plain, _quality(params))
    return A2A_JSON if a2a > 0 and a2a >= plain else JSON


def answer_type_of_scope(scope: Any) -> bytes:
    """``answer_type`` from an ASGI scope's raw headers (for answers made before routing)."""
    for name, value in scope.get("headers", ()):
        if name == b"accept":
            if _NAMED in value.lower():
                return answer_type(value.decode("latin-1")).encode()
            break
    return JSON.encode()


def json_answer(request: Any, content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``content`` (JSON text as bytes, or a value to encode as Starlette's
    ``JSONResponse`` does) with the media type ``request`` accepts."""
    if not isinstance(content, bytes):
        content = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return Response(content, status_code, headers, media_type=answer_type(request.headers.get("accept")))


__all__ = ["A2A_JSON", "JSON", "answer_type", "answer_type_of_scope", "json_answer"]
