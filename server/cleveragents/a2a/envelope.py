"""Decoding and checking raw JSON-RPC messages: the one envelope path of every transport.

A transport reads its framing and hands the body to ``read``; what comes back is a
classified message, or the error response to send instead. Kept free of pydantic so
the stdio server can use it before its services load.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import (
    InvalidRequestError,
    ParseError,
    error_payload,
    internal_error_payload,
    is_known,
)
from cleveragents.domain import json_cost

Kind = Literal["request", "notification", "response"]

# A `\uD800`-`\uDFFF` escape: a surrogate pair is fine, a lone half is not text.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class _NotJson(ValueError):
    """Text Python's parser takes but JSON (RFC 8259) does not: what it is, in ``data``."""

    def __init__(self, message: str, data: dict[str, Any]):
        super().__init__(message)
        self.data = data


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number", {"reason": "non-standard number", "literal": name})


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):  # 1e999: what it meant is lost
        raise _NotJson("a number is out of range", {"reason": "number out of range", "number": text[:40]})
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object, refusing a name given twice: which one counts differs between parsers
    (Python keeps the last), so a proxy and this server could read different requests."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        name = twice[:200].encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate is no text
        raise _NotJson(f"the name {name[:40]!r} is given twice in an object",
                       {"reason": "duplicate name", "name": name})
    return obj


# Strict JSON: no NaN or Infinity, no number that overflows, no name twice in an object.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float,
                            object_pairs_hook=_unique_keys)


def decode(body: bytes | str) -> Any:
    """JSON from bytes; bad UTF-8 or bad JSON raise ParseError."""
    try:
        text = body.decode("utf-8") if isinstance(body, (bytes, bytearray)) else body
    except UnicodeDecodeError as exc:
        raise ParseError("Parse error: the body is not valid UTF-8", {"position": exc.start}) from exc
    if not json_cost.within_budget(text):
        raise ParseError(f"Parse error: the JSON holds too many values: they would take more than "
                         f"{json_cost.MAX_PARSE_COST} bytes of memory (counted before parsing)",
                         {"reason": "too many values", "max_bytes": json_cost.MAX_PARSE_COST})
    try:
        message = _DECODER.decode(text)
    except _NotJson as exc:
        raise ParseError(f"Parse error: {exc}", exc.data) from None
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"Parse error: {exc.msg}", {"line": exc.lineno, "column": exc.colno}
        ) from exc
    except RecursionError as exc:
        raise ParseError("Parse error: the JSON is nested too deeply", {"reason": "nested too deeply"}) from exc
    except ValueError as exc:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise ParseError("Parse error: a number has too many digits", {"reason": "number too long"}) from exc
    if _ESCAPED_SURROGATE.search(text):
        try:
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ParseError("Parse error: a string holds a lone UTF-16 surrogate, which is not text",
                             {"escape": f"\\u{ord(exc.object[exc.start]):04x}"}) from None
    return message


def echo_id(message: Any) -> str | int | None:
    """The id to put on an error response: the request's, when it is a valid id."""
    if isinstance(message, dict):
        msg_id = message.get("id")
        if isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool):
            return msg_id
    return None


def means_no_params(params: Any) -> bool:
    """``null`` and ``[]`` are taken as no params: clients send both (eglot's shutdown
    sends null, and Lua encodes an empty table as an empty array)."""
    return params is None or (isinstance(params, list) and not params)


def classify(message: Any) -> Kind:
    """What kind of JSON-RPC message this is; InvalidRequestError when it is none.
    ``"params"`` that mean no params (``means_no_params``) are removed from ``message``."""
    if isinstance(message, list):
        raise InvalidRequestError("Invalid request: batch requests are not supported", {"reason": "batch"})
    if not isinstance(message, dict):
        raise InvalidRequestError(
            "Invalid request: a message must be a JSON object", {"received": type(message).__name__}
        )
    if message.get("jsonrpc") != "2.0":
        raise InvalidRequestError('Invalid request: "jsonrpc" must be "2.0"', {"field": "jsonrpc"})
    if "id" in message:
        msg_id = message["id"]
        if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int))):
            raise InvalidRequestError('Invalid request: "id" must be a string, an integer or null', {"field": "id"})
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method.strip():
            raise InvalidRequestError('Invalid request: "method" must be a non-empty string', {"field": "method"})
        if "params" in message and means_no_params(message["params"]):
            del message["params"]
        if "params" in message and not isinstance(message["params"], (dict, list)):
            raise InvalidRequestError('Invalid request: "params" must be an object or an array', {"field": "params"})
        return "request" if "id" in message else "notification"
    if "id" in message and (("result" in message) != ("error" in message)):
        return "response"
    raise InvalidRequestError('Invalid request: "method" is missing', {"field": "method"})


def error_response(msg_id: str | int | None, error: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


@dataclass(frozen=True, slots=True)
class Incoming:
    """One body as ``read`` makes it out. ``message`` is the decoded JSON (``None``
    when the body is none); ``refusal``, when set, is the error response to send
    instead of serving it, and ``kind`` is then ``None``."""

    message: Any
    kind: Kind | None
    refusal: dict[str, Any] | None = None


def read(body: bytes | str) -> Incoming:
    """Decode and classify one message; a broken one comes back with its refusal
    (-32700 with a null id, or -32600 with the request's id when it has a valid one)."""
    try:
        message = decode(body)
    except Exception as exc:  # ParseError; anything else is -32603 without detail
        return Incoming(None, None, error_response(None, error_payload(exc, dialects.EXTENSION)))
    try:
        return Incoming(message, classify(message))
    except Exception as exc:
        return Incoming(message, None, error_response(echo_id(message), error_payload(exc, dialects.EXTENSION)))


def failure(msg_id: str | int | None, exc: BaseException, where: str) -> dict[str, Any]:
    """The response to a request whose serving raised ``exc`` outside the facade: a
    known refusal as itself, anything else -32603 logged under an error id."""
    payload = (error_payload(exc, dialects.EXTENSION) if is_known(exc)
               else internal_error_payload(exc, dialects.EXTENSION, where))
    return error_response(msg_id, payload)
