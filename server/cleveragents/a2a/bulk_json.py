"""JSON for answers of megabytes (``MethodSpec.bulk``), encoded a piece at a time.

pydantic's encoder holds the GIL for the whole of a call: one call on a 15 MiB plan diff
held it for about 100 ms, and no other thread, the event loop's included, ran meanwhile.
``encode`` walks the value and hands pydantic one piece at a time (a batch of small
items, a slice of a long string); between two pieces the other threads get their turn.
The bytes are those one call would give. A value that turns out small (``small``) is
cheaper to encode at once, where it is, than to hand to a worker thread and back.
"""

from __future__ import annotations

from typing import Any

import pydantic_core

PIECE_CHARS = 1 << 18  # of a long string, encoded per call
BATCH = 512  # small items of a list, encoded per call
_CONTAINERS = (dict, list, tuple)
SMALL_SIZE = 1 << 14  # characters of text, plus ITEM_SIZE an item: encoded and counted in about 100 us
ITEM_SIZE = 32  # an item costs the count a step, as long as 32 characters of text do
_SCALARS = frozenset({int, float, bool, type(None)})


def small(value: Any, size: int = SMALL_SIZE) -> bool:
    """Whether ``value`` (plain JSON data) holds at most ``size`` characters of text
    and items (``ITEM_SIZE`` each), counted without encoding it; the count stops as
    soon as it is over. Anything but plain data counts as large."""
    left = size
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            left -= len(item) * ITEM_SIZE
            if left < 0:
                return False
            for key, member in item.items():
                if type(key) is not str:
                    return False
                left -= len(key)
                if type(member) is str:
                    left -= len(member)
                elif type(member) not in _SCALARS:
                    pending.append(member)
        elif kind is list or kind is tuple:
            left -= len(item) * ITEM_SIZE
            pending.extend(item)
        elif kind is str:
            left -= len(item)
        elif kind not in _SCALARS:
            return False
        if left < 0:
            return False
    return True


def encode(value: Any) -> bytes:
    out: list[bytes] = []
    _walk(value, out)
    return b"".join(out)


def _walk(value: Any, out: list[bytes]) -> None:
    if isinstance(value, str) and len(value) > PIECE_CHARS:
        out.append(b'"')
        out.extend(_json(value[start:start + PIECE_CHARS])[1:-1] for start in range(0, len(value), PIECE_CHARS))
        out.append(b'"')
    elif type(value) is dict and not _small(value) and all(type(key) is str for key in value):
        separator = b"{"
        for key, item in value.items():
            out.append(separator + _json(key) + b":")
            _walk(item, out)
            separator = b","
        out.append(b"}")
    elif type(value) in (list, tuple):
        out.append(b"[")
        run: list[Any] = []
        for item in value:
            if _small(item):
                run.append(item)
                if len(run) == BATCH:
                    _run(run, out)
                    run = []
                continue
            if run:
                _run(run, out)
                run = []
            if out[-1] != b"[":
                out.append(b",")
            _walk(item, out)
        if run:
            _run(run, out)
        out.append(b"]")
    else:
        out.append(_json(value))


def _run(items: list[Any], out: list[bytes]) -> None:
    """Small items, encoded in one call, into the list being written."""
    if out[-1] != b"[":
        out.append(b",")
    out.append(_json(items)[1:-1])


def _json(value: Any) -> bytes:
    return pydantic_core.to_json(value, inf_nan_mode="null")


def _scalar(value: Any) -> bool:
    return type(value) not in _CONTAINERS and not (isinstance(value, str) and len(value) > PIECE_CHARS)


def _small(value: Any) -> bool:
    """Cheap to encode in one call: a scalar, or a small flat dict (a search hit, a file entry)."""
    if type(value) is dict:
        return len(value) <= 16 and all(_scalar(item) for item in value.values())
    return _scalar(value)
