"""What a protobuf message would take in memory once parsed and converted to ProtoJSON,
bounded from above before either runs.

Two bytes of protobuf make an empty message, which upb and then ``MessageToDict``
make about 185 bytes of: a 12 MiB message of empty parts would take a gigabyte. The
JSON a client or an agent sends is bounded the same way before it is parsed
(``domain.json_cost``), and with the same budget. ``parse_cost`` walks the fields
with the message's descriptor, stepping over every string and bytes value (a long
string is searched, at C speed, for how wide its characters are), and weighs each
field by the most it can take, measured on CPython 3.11 with protobuf 7
(``tests/unit/test_grpc_cost.py``): a message of any type, and any other field, each
with its slot in the dict it lands in. Only a message long enough to pass
the budget at the worst weight is walked, and the walk stops as soon as it passes.
"""

from __future__ import annotations

import re
from typing import Any

from cleveragents.domain.json_cost import MAX_PARSE_COST

__all__ = ["MAX_PARSE_COST", "MalformedMessage", "TooManyValues", "parse_cost", "walked", "within_budget"]

_MESSAGE = 256  # bytes at most, per submessage on the wire: upb's message, its dict and slot
_FIELD = 200  # per other field: upb's slot, the value's object and its dict member
_PER_BYTE = 6  # per byte of a bytes value (or a short string): upb's copy, the bytes read, their base64 and str
# A string is upb's copy and a str of 1, 2 or 4 bytes a character, as wide as its widest
# one (and the narrower start of a str that widened while it was decoded). Strings this
# long are read for their width at C speed; shorter ones cost the most.
_TEXT_READ_AT = 4096
_ASTRAL = re.compile(rb"[\xf0-\xf4]")  # leads a character past U+FFFF: 4 bytes each
_PER_PACKED_BYTE = 64  # per byte of a packed run of numbers: each element takes at least one
_MOST_PER_BYTE = _MESSAGE // 2  # a field takes at least two bytes: no byte costs more
_NESTING = 100  # upb's own limit; past it the parse fails anyway
# Wire types (the low three bits of a field's tag).
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_FIXED = {_FIXED64: 8, _FIXED32: 4}


class MalformedMessage(ValueError):
    """Bytes that are not a protobuf message; upb would refuse them too."""


class TooManyValues(ValueError):
    """A message whose values would take more than the budget."""


def walked(size: int, budget: int = MAX_PARSE_COST) -> bool:
    """Whether a message of ``size`` bytes could pass ``budget``, so must be walked."""
    return size * (1 + _MOST_PER_BYTE) > budget


def within_budget(descriptor: Any, data: bytes, budget: int = MAX_PARSE_COST) -> bool:
    """Whether ``data``, a serialized message of ``descriptor``, takes at most ``budget``
    bytes parsed and converted. ``MalformedMessage`` for bytes the walk can't read."""
    return not walked(len(data), budget) or parse_cost(descriptor, data, budget) <= budget


def parse_cost(descriptor: Any, data: bytes, budget: int | None = None) -> int:
    """An upper bound, in bytes, of the memory parsing ``data`` as a ``descriptor``
    message and converting it with ``MessageToDict`` would take; the walk stops once
    past ``budget``, and returns what it has counted by then."""
    view = memoryview(data)
    cost = len(data)
    stop = budget if budget is not None else -1
    frames: list[tuple[Any, int]] = []  # the enclosing messages: (their fields' walk, where each ends)
    end = len(data)
    fields = _fields(descriptor)
    position = 0
    try:
        while True:
            while position < end:
                tag, position = _varint(view, position)
                wire = tag & 7
                if wire == _LENGTH:
                    length, position = _varint(view, position)
                    start, position = position, position + length
                    if position > end:
                        raise MalformedMessage("a field runs past its message")
                    kind = fields.get(tag >> 3)
                    if type(kind) is dict:  # a message: walked in its turn
                        cost += _MESSAGE
                        if len(frames) >= _NESTING:
                            raise MalformedMessage(f"messages nest more than {_NESTING} deep")
                        frames.append((fields, end))
                        fields, end, position = kind, position, start
                    elif kind is _PACKED:
                        cost += _FIELD + _PER_PACKED_BYTE * length
                    elif kind is _TEXT and length >= _TEXT_READ_AT:
                        cost += _FIELD + (2 + _width(data, start, position)) * length
                    else:
                        cost += _FIELD + _PER_BYTE * length
                elif wire == _VARINT:
                    _, position = _varint(view, position)
                    cost += _FIELD
                elif wire in _FIXED:
                    position += _FIXED[wire]
                    cost += _FIELD
                else:  # groups: no proto3 message has them
                    raise MalformedMessage(f"wire type {wire} is not read here")
                if 0 <= stop < cost:
                    return cost
            if position != end:
                raise MalformedMessage("a field runs past its message")
            if not frames:
                return cost
            fields, end = frames.pop()
    except IndexError:
        raise MalformedMessage("the message ends inside a field") from None


_PACKED, _TEXT = "packed", "text"
_WALKS: dict[Any, dict[int, Any]] = {}


def _fields(descriptor: Any) -> dict[int, Any]:
    """Field number -> the walk of the message it holds (a dict, shared by every
    message of that type), ``_TEXT`` for a string, ``_PACKED`` for a repeated number,
    else None."""
    known = _WALKS.get(descriptor)
    if known is not None:
        return known
    walk: dict[int, Any] = {}
    _WALKS[descriptor] = walk  # before its fields: a message may hold its own type
    for field in descriptor.fields:
        if field.message_type is not None:
            walk[field.number] = _fields(field.message_type)
        elif field.type == field.TYPE_STRING:
            walk[field.number] = _TEXT
        elif field.is_repeated and field.type != field.TYPE_BYTES:
            walk[field.number] = _PACKED
        else:
            walk[field.number] = None
    return walk


def _width(data: bytes, start: int, end: int) -> int:
    """Bytes a character of the str the UTF-8 at ``data[start:end]`` decodes to, at
    most (ASCII: 1; past U+FFFF: 4; else 2)."""
    if data[start:end].isascii():  # a copy, and a check a word at a time: far quicker than a search
        return 1
    return 4 if _ASTRAL.search(data, start, end) else 2


def _varint(view: memoryview, position: int) -> tuple[int, int]:
    byte = view[position]
    if byte < 0x80:
        return byte, position + 1
    value, shift = byte & 0x7F, 7
    while True:
        position += 1
        byte = view[position]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position + 1
        shift += 7
        if shift > 63:
            raise MalformedMessage("a varint longer than ten bytes")
