"""What the outbound client raises.

- ``A2AClientError``: the call never got an A2A answer (connection refused, timeout,
  an HTTP error status, a body that is not JSON-RPC). Subclasses say which.
- ``A2ARemoteError``: the peer answered with a JSON-RPC error. The exception is also
  an instance of the project's class for that error (``TaskNotFoundError``,
  ``AuthenticationError``, ...), read backwards from the tables in ``a2a/errors.py``:
  by the 1.0 ErrorInfo reason and code, else by a code that names one kind of error.
  A plain -32603, or a code no table has, is a bare ``A2ARemoteError`` with the peer's
  message. Callers catch remote refusals the way they catch local ones.

Every message names the URL and the method. No credential ever goes in one.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from cleveragents.a2a.errors import (
    A2A_ERROR_CODES,
    ERROR_INFO_TYPE,
    EXTENSION_ERROR_CODES,
    INTERNAL_ERROR,
    A2AError,
)
from cleveragents.domain.errors import AuthenticationError, AuthorizationError, StructuredError


class A2AClientError(A2AError):
    """A transport failure: no JSON-RPC answer came back."""

    default_message = "A2A call failed"

    def __init__(self, message: str, data: dict[str, Any] | None = None, *, url: str | None = None,
                 method: str | None = None, status: int | None = None):
        StructuredError.__init__(self, message, data)
        self.url, self.method, self.status = url, method, status
        self.code: int | None = None


class A2AClientTimeoutError(A2AClientError, TimeoutError):
    """The peer did not answer within the configured timeout."""


class A2AClientConnectionError(A2AClientError, ConnectionError):
    """The peer could not be reached (refused, reset, DNS, TLS)."""


class A2AClientTargetRefusedError(A2AClientError):
    """The peer named somewhere the client won't go (``client_reach.py``); ``data``
    has the ``url``, the ``address`` and the ``reason``."""


class A2AClientHTTPError(A2AClientError):
    """The peer answered with an HTTP error status."""


class A2ARemoteError(A2AError):
    """The peer answered with a JSON-RPC error; ``code`` and ``data`` are its own.

    ``data`` is always an object: a 1.0 peer's ErrorInfo ``metadata`` (with ``reason``),
    or the error's ``data`` as sent. ``details`` keeps a 1.0 peer's list unchanged.
    """

    def __init__(self, message: str, data: dict[str, Any] | None = None, *, code: int = INTERNAL_ERROR,
                 url: str | None = None, method: str | None = None, status: int | None = None,
                 reason: str | None = None, details: list[Any] | None = None):
        StructuredError.__init__(self, message, data)
        self.code, self.url, self.method, self.status = code, url, method, status
        self.reason, self.details = reason, details
        self.operation = (data or {}).get("method", method)  # as A2AOperationNotFoundError has


def _first_by_code(table: dict[type[Exception], Any]) -> dict[int, type[Exception]]:
    """The first class of each code, except -32603: it is every server's catch-all, so
    the code alone says nothing of the cause (a storage-full answer carries its reason)."""
    out: dict[int, type[Exception]] = {}
    for cls, entry in table.items():
        code = entry[0] if isinstance(entry, tuple) else entry
        if code != INTERNAL_ERROR:
            out.setdefault(code, cls)
    return out


_STANDARD_BY_CODE = _first_by_code(A2A_ERROR_CODES)
_EXTENSION_BY_CODE = _first_by_code(EXTENSION_ERROR_CODES)
# A 1.0 peer's ErrorInfo reason, with its code where two codes share a reason.
_BY_CODE_AND_REASON: dict[tuple[int, str], type[Exception]] = {}
_BY_REASON: dict[str, type[Exception]] = {}
for _cls, (_code, _reason) in A2A_ERROR_CODES.items():
    _BY_CODE_AND_REASON.setdefault((_code, _reason), _cls)
    _BY_REASON.setdefault(_reason, _cls)


_REMOTE_CLASSES: dict[type[Exception], type[A2ARemoteError]] = {}  # one per known error class


def _remote_class(kind: type[Exception]) -> type[A2ARemoteError]:
    if issubclass(A2ARemoteError, kind):
        return A2ARemoteError
    if (known := _REMOTE_CLASSES.get(kind)) is None:
        known = _REMOTE_CLASSES[kind] = type(f"Remote{kind.__name__}", (A2ARemoteError, kind), {"__module__": __name__})
    return known


@cache
def _http_class(kind: type[Exception]) -> type[A2AClientHTTPError]:
    return type(f"{kind.__name__.removesuffix('Error')}HTTPError", (A2AClientHTTPError, kind),
                {"__module__": __name__})


def remote_error(error: Any, *, url: str, method: str, standard: bool,
                 status: int | None = None) -> A2ARemoteError:
    """The exception for a JSON-RPC ``error`` object. ``standard``: the method is an A2A
    one, whose codes follow the A2A table rather than the extension table."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return A2ARemoteError(f"{method} at {url} failed with a malformed error: {str(error)[:200]}",
                              url=url, method=method, status=status)
    code, text, raw = error["code"], str(error.get("message") or "error"), error.get("data")
    reason, data, details = None, raw if isinstance(raw, dict) else {}, None
    if isinstance(raw, list):  # 1.0: google.rpc details
        details = raw
        info = next((d for d in raw if isinstance(d, dict) and d.get("@type") == ERROR_INFO_TYPE), None)
        if info is not None:
            reason = info.get("reason")
            data = {**(info.get("metadata") or {}), "reason": reason}
    elif raw is not None and not isinstance(raw, dict):
        data = {"detail": raw}
    kind = (_BY_CODE_AND_REASON.get((code, reason or "")) or _BY_REASON.get(reason or "")
            or (_STANDARD_BY_CODE if standard else _EXTENSION_BY_CODE).get(code))
    remote = A2ARemoteError if kind is None else _remote_class(kind)
    return remote(f"{method} at {url} failed: {text} (code {code})", data, code=code, url=url,
                  method=method, status=status, reason=reason, details=details)


def http_error(status: int, *, url: str, method: str, body: str) -> A2AClientHTTPError:
    """An HTTP error status without a JSON-RPC error in its body."""
    hint = {401: "the token was refused or is missing", 403: "the token may not do this",
            404: "no A2A endpoint there", 408: "the server timed out", 429: "too many requests"}.get(status)
    if hint is None and status >= 500:
        hint = "the server failed"
    snippet = " ".join(body.split())[:200]
    message = f"{method} at {url}: HTTP {status}" + (f" ({hint})" if hint else "") + (f": {snippet}" if snippet else "")
    kind = {401: AuthenticationError, 403: AuthorizationError}.get(status)
    cls = _http_class(kind) if kind else A2AClientHTTPError
    return cls(message, {"status": status}, url=url, method=method, status=status)


def with_auth_kind(exc: A2ARemoteError, status: int) -> A2ARemoteError:
    """A JSON-RPC error that came with 401/403 is an authentication/authorization error
    whatever its code says."""
    kind = {401: AuthenticationError, 403: AuthorizationError}.get(status)
    if kind is None or isinstance(exc, kind):
        return exc
    cls = _remote_class(kind)
    return cls(exc.message, exc.data, code=exc.code, url=exc.url, method=exc.method, status=status,
               reason=exc.reason, details=exc.details)
