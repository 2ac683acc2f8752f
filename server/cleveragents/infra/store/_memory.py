"""What every in-memory store module shares: the base of the repositories."""

from __future__ import annotations

from collections.abc import Callable

from cleveragents.infra.store.records import RecordReader


class MemoryRepository:
    """One concern's calls (sessions, tasks, ...) in the in-memory store: they share its
    open/closed state and its record reader."""

    def __init__(self, check_open: Callable[[], None], records: RecordReader):
        self._check_open = check_open
        self.records = records
