"""Cursor pagination: a page's cursor is the store position of its last row."""

from __future__ import annotations

from cleveragents.domain.errors import ValidationError

MAX_POSITION = 2**63 - 1  # SQLite's largest integer


def parse_cursor(cursor: str | None, field: str = "cursor") -> int | None:
    """The position a cursor from a previous page stands for; ``None`` for the first page."""
    if not cursor:
        return None
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 19 and int(cursor) <= MAX_POSITION):
        raise ValidationError("Invalid params", {"errors": [
            {"loc": [field], "msg": "not a cursor from a previous page", "type": "value_error"}]})
    return int(cursor)
