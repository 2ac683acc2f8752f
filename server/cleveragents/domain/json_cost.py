"""What a JSON text's values would take in memory once parsed, bounded from above
without parsing it.

Parsing makes a Python object of every value, and a short text can hold very many:
``[{},{},...]`` takes about 25 bytes of memory for each byte of text. ``parse_cost``
counts the characters that open a value or a member (braces, brackets, quotes, commas
and colons; those inside strings too, which only overcounts) and weighs each by the
most the object it opens can take, measured on CPython 3.11: an empty object or list
and its slot, a short string, a float and its slot, a member of a growing object. The
counts run at C speed, and only over a text long enough for its cost to pass the
budget at the worst weight.
"""

from __future__ import annotations

MAX_PARSE_COST = 384 * 1024 * 1024  # bytes of memory one parse may take
_CONTAINER, _STRING, _ITEM, _MEMBER = 72, 56, 48, 48  # bytes, at most, per character counted
_MOST_PER_CHAR = _CONTAINER  # no character of a text costs more


def parse_cost(text: str | bytes) -> int:
    """An upper bound, in bytes, of the memory ``json.loads(text)`` would take."""
    if isinstance(text, str):
        opened = text.count("{") + text.count("[")
        quotes, items, members = text.count('"'), text.count(","), text.count(":")
    else:
        opened = text.count(b"{") + text.count(b"[")
        quotes, items, members = text.count(b'"'), text.count(b","), text.count(b":")
    return len(text) + _CONTAINER * opened + _STRING * (quotes // 2) + _ITEM * items + _MEMBER * members


def within_budget(text: str | bytes, budget: int = MAX_PARSE_COST) -> bool:
    """Whether parsing ``text`` takes at most ``budget`` bytes (counted only for a text
    long enough to pass it)."""
    return len(text) * (1 + _MOST_PER_CHAR) <= budget or parse_cost(text) <= budget
