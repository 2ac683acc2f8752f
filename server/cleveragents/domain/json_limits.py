"""How deep and how large free-form JSON may be: what the server accepts, and what it serves.

A client's JSON reaches the store in many fields (message, part and task metadata, data
parts, plan arguments, context values, push configs, members nobody reads), and
whatever is stored is served again to every client that lists it. So the limits are
checked in two places only, each covering every field at once:

- a request's ``params``, by the protocol boundary before anything reads them: objects
  and arrays nest at most ``max_depth`` levels (``params`` itself is level 1), and each
  ``metadata`` object is at most ``max_metadata_size`` bytes of compact UTF-8 JSON;
- a stored record, as a store reads it: it is served only when its JSON nests at most
  ``MAX_RECORD_DEPTH`` levels. That is above anything the request limit lets in (a
  record wraps a request's values in a few levels of its own), and below what JSON
  parsers commonly refuse (128 levels), so a record the server serves can be read by
  every client.

Most values can't be past a limit, and that is cheap to prove: their compact JSON
(serialized in native code) has fewer opening brackets than levels allowed and fewer
bytes than a metadata object may hold. Only the others are walked: the walk descends
only into objects and arrays, stops at the first value past the limit, and recurses at
most ``max_depth`` levels.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cleveragents.domain.errors import ValidationError

MAX_DEPTH = 64
MAX_DEPTH_CEILING = 100  # the most a configuration may allow: records must stay below MAX_RECORD_DEPTH
MAX_METADATA_SIZE = 256 * 1024
MAX_METADATA_SIZE_CEILING = 16 * 1024 * 1024  # a whole message's limit
MAX_RECORD_DEPTH = 112
METADATA = "metadata"

Loc = list[str | int]


@dataclass(frozen=True, slots=True)
class JsonLimits:
    """The limits on a request's params (``max_json_depth`` and ``max_metadata_size`` in
    the configuration)."""

    max_depth: int = MAX_DEPTH
    max_metadata_size: int = MAX_METADATA_SIZE

    def __post_init__(self) -> None:
        if not (isinstance(self.max_depth, int) and 8 <= self.max_depth <= MAX_DEPTH_CEILING):
            raise ValueError(f"max_json_depth must be an integer from 8 to {MAX_DEPTH_CEILING}, "
                             f"not {self.max_depth!r}")
        if not (isinstance(self.max_metadata_size, int) and 1024 <= self.max_metadata_size
                <= MAX_METADATA_SIZE_CEILING):
            raise ValueError(f"max_metadata_size must be an integer from 1024 to {MAX_METADATA_SIZE_CEILING}, "
                             f"not {self.max_metadata_size!r}")

    def check_params(self, params: Mapping[str, Any], method: str | None = None) -> None:
        """``ValidationError`` naming the first value of ``params`` past a limit."""
        if _clearly_within(params, self.max_depth, self.max_metadata_size):
            return
        try:
            _walk(params, 1, self.max_depth, self.max_metadata_size)
        except _Past as past:
            loc = past.loc[::-1]
            if past.too_deep:
                error = {"loc": loc, "msg": f"nested deeper than {self.max_depth} levels of objects and arrays "
                                            "(counted from params)", "type": "too_deep", "limit": self.max_depth}
            else:
                error = {"loc": loc, "msg": f"larger than {self.max_metadata_size} bytes of JSON (the limit of "
                                            "a metadata object)", "type": "too_large", "limit": self.max_metadata_size}
            data: dict[str, Any] = {"method": method} if method else {}
            raise ValidationError("Invalid params", {**data, "errors": [error]}) from None


def first_too_deep(value: Any, max_depth: int = MAX_RECORD_DEPTH) -> Loc | None:
    """Where ``value`` first nests deeper than ``max_depth`` levels (``value`` itself is
    level 1), or None when it doesn't."""
    if not _is_container(value) or _clearly_within(value, max_depth, None):
        return None
    try:
        _walk(value, 1, max_depth, 0)
    except _Past as past:
        return past.loc[::-1]
    return None


class _Past(Exception):
    """A value past a limit; ``loc`` is collected innermost first as the walk unwinds."""

    def __init__(self, key: str | int, too_deep: bool):
        super().__init__()
        self.loc: Loc = [key]
        self.too_deep = too_deep


def _compact_json(value: Any) -> bytes | None:
    """``value`` as compact UTF-8 JSON, or None when the fast encoder can't write it (a
    lone surrogate, or nesting past its own limit)."""
    import pydantic_core  # here, not at import: the stdio server's start doesn't need it

    try:
        return pydantic_core.to_json(value, fallback=str, inf_nan_mode="constants")
    except (ValueError, TypeError, pydantic_core.PydanticSerializationError):
        return None


def _clearly_within(value: Any, max_depth: int, max_size: int | None) -> bool:
    """Whether ``value`` is within both limits on evidence that costs no walk: each
    level needs an opening bracket, and no part of it is larger than all of it."""
    text = _compact_json(value)
    if text is None or (max_size is not None and len(text) > max_size):
        return False
    return text.count(b"{") + text.count(b"[") <= max_depth


def _is_container(value: Any) -> bool:
    kind = type(value)
    return kind is dict or kind is list or (kind is not str and isinstance(value, (Mapping, list, tuple)))


def _walk(value: Any, level: int, max_depth: int, metadata_size: int) -> None:
    """Raise ``_Past`` at the first child of ``value`` (at ``level``) past a limit.
    ``metadata_size`` 0 leaves sizes unchecked (inside a metadata object, it is measured
    whole)."""
    for key, child in (value.items() if isinstance(value, Mapping) else enumerate(value)):
        kind = type(child)
        if kind is str or kind is int or kind is bool or kind is float or child is None:
            continue
        if not (kind is dict or kind is list or isinstance(child, (Mapping, list, tuple))):
            continue
        if level >= max_depth:
            raise _Past(key, too_deep=True)
        if not child:
            continue
        is_metadata = metadata_size and key == METADATA and isinstance(child, Mapping)
        try:
            _walk(child, level + 1, max_depth, 0 if is_metadata else metadata_size)
        except _Past as past:
            past.loc.append(key)
            raise
        if is_metadata and json_size(child) > metadata_size:
            raise _Past(key, too_deep=False)


def json_size(value: Any) -> int:
    """The size of ``value`` as compact UTF-8 JSON."""
    if (text := _compact_json(value)) is not None:
        return len(text)
    # A lone surrogate (text read from a file, in process): as many bytes as it would take.
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
               .encode("utf-8", "surrogatepass"))
