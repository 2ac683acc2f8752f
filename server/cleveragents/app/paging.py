"""Cursor pagination: a page's cursor is the store position of its last row."""

from __future__ import annotations

from typing import TypeVar

from cleveragents.domain.errors import ValidationError
from cleveragents.domain.page_budget import PageBudget

T = TypeVar("T")

MAX_POSITION = 2**63 - 1  # SQLite's largest integer
PAGE_CHARS = 16 * 1024 * 1024  # stored JSON a page of tasks reads, past its first: a task can be megabytes


def parse_cursor(cursor: str | None, field: str = "cursor") -> int | None:
    """The position a cursor from a previous page stands for; ``None`` for the first page."""
    if not cursor:
        return None
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 19 and int(cursor) <= MAX_POSITION):
        raise ValidationError.for_field([field], "not a cursor from a previous page")
    return int(cursor)


def page(rows: list[tuple[int, T]], limit: int) -> tuple[list[T], str | None]:
    """A page from ``limit + 1`` rows read newest first: its items, and the cursor of the
    next page (``None`` on the last)."""
    items = rows[:limit]
    return [item for _, item in items], (str(items[-1][0]) if len(rows) > limit else None)


def budgeted_page(rows: list[tuple[int, T]], limit: int, budget: PageBudget) -> tuple[list[T], str | None]:
    """``page``, of rows read under ``budget``: a page the budget ended early goes on
    from its last row."""
    if budget.ended_early and rows and len(rows) <= limit:
        return [item for _, item in rows], str(rows[-1][0])
    return page(rows, limit)
