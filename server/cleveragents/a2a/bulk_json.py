"""JSON for answers of megabytes (``MethodSpec.bulk``), encoded a piece at a time.

pydantic's encoder holds the GIL for the whole of a call: one call on a 15 MiB plan diff
held it for about 100 ms, and no other thread, the event loop's included, ran meanwhile.
``encode`` walks the value and hands pydantic one piece at a time (a run of items, a
container, a slice of a long string, each of a bounded size); between two pieces the
other threads get their turn.
The bytes are those one call would give. A value that turns out small (``small``) is
cheaper to encode at once, where it is, than to hand to a worker thread and back.
"""

from __future__ import annotations

from typing import Any

import pydantic_core

PIECE_CHARS = 1 << 18  # of a long string, encoded per call
# Of a run of a list's items, or of a dict's member, in the units ``small`` counts:
# encoded per call; about 100 us of pydantic's encoder, a page of 90 small tasks.
PIECE_SIZE = 1 << 16
# A value this small is encoded at once, where it is. A worker thread only helps the
# event loop when the encoding outlasts the interpreter's switch interval (5 ms): below
# it, the thread holds the GIL about as long, and the hop to it and back comes on top.
SMALL_SIZE = PIECE_SIZE
ITEM_SIZE = 32  # an item costs the count a step, as long as 32 characters of text do
_SCALARS = frozenset({int, float, bool, type(None)})
_SEQUENCES = (list, tuple)


def small(value: Any, size: int = SMALL_SIZE) -> bool:
    """Whether ``value`` (plain JSON data) holds at most ``size`` characters of text
    and items (``ITEM_SIZE`` each), counted without encoding it; the count stops as
    soon as it is over. Anything but plain data counts as large."""
    return _size(value, size) is not None


def _size(value: Any, limit: int) -> int | None:
    """What ``small`` counts of ``value``; ``None`` once it is over ``limit``, or for
    anything but plain data."""
    left = limit
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            left -= len(item) * ITEM_SIZE
            if left < 0:
                return None
            for key, member in item.items():
                if type(key) is not str:
                    return None
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
            return None
        if left < 0:
            return None
    return limit - left


def encode(value: Any) -> bytes:
    out: list[bytes] = []
    _take_apart(value, out)
    return b"".join(out)


def _take_apart(value: Any, out: list[bytes]) -> None:
    """``value`` a part at a time: a long string in slices, a dict member by member, a
    list in runs of the items that fit in a piece together. Only the parts are counted,
    each once, so the walk reads a value about once however deep it is."""
    kind = type(value)
    if kind is str and len(value) > PIECE_CHARS:
        out.append(b'"')
        out.extend(_json(value[start:start + PIECE_CHARS])[1:-1] for start in range(0, len(value), PIECE_CHARS))
        out.append(b'"')
    elif kind is dict and all(type(key) is str for key in value):
        separator = b"{"
        for key, member in value.items():
            out.append(separator + _json(key) + b":")
            if type(member) in _SEQUENCES or _size(member, PIECE_SIZE) is None:
                _take_apart(member, out)  # a list's items are counted there, as they are placed
            else:
                out.append(_json(member))
            separator = b","
        out.append(b"}" if value else b"{}")
    elif kind in _SEQUENCES:
        out.append(b"[")
        run: list[Any] = []
        run_size = 0
        for item in value:
            size = _size(item, PIECE_SIZE)
            if size is not None:
                size += ITEM_SIZE  # its place in the list, as ``small`` counts it: a run of numbers is bounded too
            if run and (size is None or run_size + size > PIECE_SIZE):
                _run(run, out)
                run, run_size = [], 0
            if size is None:  # too big for one piece: taken apart in its turn
                if out[-1] != b"[":
                    out.append(b",")
                _take_apart(item, out)
            else:
                run.append(item)
                run_size += size
        if run:
            _run(run, out)
        out.append(b"]")
    else:
        out.append(_json(value))


def _run(items: list[Any], out: list[bytes]) -> None:
    """Items encoded in one call, into the list being written."""
    if out[-1] != b"[":
        out.append(b",")
    out.append(_json(items)[1:-1])


def _json(value: Any) -> bytes:
    return pydantic_core.to_json(value, inf_nan_mode="null")
