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

A value is checked level by level, one flat pass per level over its objects and
arrays (strings are never read, so a long text costs nothing), and each metadata object
is measured by serializing it in native code, which also proves most of them shallow
enough without a pass over their insides. Only a value past a limit (or one this can't
settle) is walked again, recursively and at most ``max_depth`` levels deep, to name
the first place past it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Nothing else at import: config.py imports the defaults on the stdio server's start.
MAX_DEPTH = 64
MAX_DEPTH_CEILING = 100  # the most a configuration may allow: records must stay below MAX_RECORD_DEPTH
MAX_METADATA_SIZE = 256 * 1024
MAX_METADATA_SIZE_CEILING = 16 * 1024 * 1024  # a whole message's limit
MAX_RECORD_DEPTH = 112
METADATA = "metadata"

Loc = list[str | int]


class JsonLimits:
    """The limits on a request's params (``max_json_depth`` and ``max_metadata_size`` in
    the configuration)."""

    __slots__ = ("max_depth", "max_metadata_size")

    def __init__(self, max_depth: int = MAX_DEPTH, max_metadata_size: int = MAX_METADATA_SIZE):
        self.max_depth = max_depth
        self.max_metadata_size = max_metadata_size
        if not (isinstance(self.max_depth, int) and 8 <= self.max_depth <= MAX_DEPTH_CEILING):
            raise ValueError(f"max_json_depth must be an integer from 8 to {MAX_DEPTH_CEILING}, "
                             f"not {self.max_depth!r}")
        if not (isinstance(self.max_metadata_size, int) and 1024 <= self.max_metadata_size
                <= MAX_METADATA_SIZE_CEILING):
            raise ValueError(f"max_metadata_size must be an integer from 1024 to {MAX_METADATA_SIZE_CEILING}, "
                             f"not {self.max_metadata_size!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonLimits) and (self.max_depth, self.max_metadata_size) == (
            other.max_depth, other.max_metadata_size)

    def __hash__(self) -> int:
        return hash((self.max_depth, self.max_metadata_size))

    def __repr__(self) -> str:
        return f"JsonLimits(max_depth={self.max_depth}, max_metadata_size={self.max_metadata_size})"

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
            from cleveragents.domain.errors import ValidationError

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


_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (Mapping, list, tuple)


def _clearly_within(value: Any, max_depth: int, max_size: int | None) -> bool:
    """Whether ``value`` is within both limits, found level by level: each level is one
    flat pass over its objects and arrays, and strings are never read. A metadata
    object is serialized in native code instead (its size is needed anyway): when its
    JSON has fewer opening brackets than the levels left, it can't be too deep;
    otherwise it is walked alone. False also when this can't tell (``_walk`` decides)."""
    level: list[Any] = [value]
    depth = 1  # of the containers in `level`
    while level:
        below: list[Any] = []
        for node in level:
            if type(node) is list:
                for child in node:
                    kind = type(child)
                    if kind is dict or kind is list:
                        below.append(child)
                    elif kind not in _SCALARS and isinstance(child, _CONTAINERS):
                        return False  # not plain JSON: the walk decides
                continue
            if not isinstance(node, Mapping):
                return False
            for key, child in node.items():
                kind = type(child)
                if kind is list:
                    below.append(child)
                elif kind is dict:
                    if key != METADATA or max_size is None or not child:
                        below.append(child)
                    elif not _metadata_within(child, max_size, max_depth - depth):
                        return False
                elif kind not in _SCALARS and isinstance(child, _CONTAINERS):
                    return False
        if below:
            depth += 1
            if depth > max_depth:
                return False
        level = below
    return True


def _metadata_within(metadata: Any, max_size: int, levels_left: int) -> bool:
    """Whether a metadata object is at most ``max_size`` bytes of JSON and nests at most
    ``levels_left`` levels (itself the first)."""
    import pydantic_core  # here, not at import: the stdio server's start doesn't need it

    try:
        text = pydantic_core.to_json(metadata, fallback=str, inf_nan_mode="constants")
    except (ValueError, TypeError, pydantic_core.PydanticSerializationError):
        return False  # a lone surrogate, or nesting past the encoder's own limit
    if len(text) > max_size:
        return False
    if text.count(b"{") + text.count(b"[") <= levels_left:
        return True
    try:  # more brackets than levels: count the levels (the size is known to be small)
        _walk(metadata, 1, levels_left, 0)
    except _Past:
        return False
    return True


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
    """The size of ``value`` (nested within the limits) as compact UTF-8 JSON."""
    import pydantic_core  # here, not at import: the stdio server's start doesn't need it

    try:
        return len(pydantic_core.to_json(value, fallback=str, inf_nan_mode="constants"))
    except (ValueError, TypeError, pydantic_core.PydanticSerializationError):
        import json

        # A lone surrogate (text read from a file, in process): as many bytes as it would take.
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
                   .encode("utf-8", "surrogatepass"))
