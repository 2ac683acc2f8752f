"""What one page of a listing may hold.

A stored record can be megabytes (a task's history holds every message), and a page of
a hundred of them is what a store reads and decodes before anything is answered: a
budget on their stored JSON ends a page early instead.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PageBudget:
    """Characters of stored JSON a page may hold. The store ends a page after the record
    that passes it (so a page holds at least one), and sets ``ended_early`` when records
    may follow it."""

    max_chars: int
    used: int = 0
    ended_early: bool = False

    def spend(self, chars: int) -> bool:
        """Counts one record in; False once the page has passed the budget."""
        self.used += chars
        return self.used <= self.max_chars
