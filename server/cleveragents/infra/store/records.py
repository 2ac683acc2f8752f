"""Reading stored records that may not be servable, for both stores.

A record can be stored that the server can't serve: written by an older version that
took any JSON, by a bug, or by hand. It may not be JSON, may not decode into its
entity, or may nest deeper than ``MAX_RECORD_DEPTH`` (clients' parsers refuse such
JSON, and so does the server's own serializer). Such a record must never break the
lists it is in: every read goes through ``RecordReader``, which gives lists ``None`` to
skip and single reads an ``UnreadableRecordError`` naming the store, the id and why.
Each such record is logged once and kept for ``_cleveragents/diagnostics/run``, up to
``MAX_KEPT`` of them; past that one warning says so, and the rest are skipped quietly.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import pydantic_core

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.json_limits import MAX_RECORD_DEPTH, first_too_deep
from cleveragents.domain.page_budget import PageBudget

logger = logging.getLogger("cleveragents.store")
T = TypeVar("T")
R = TypeVar("R")

MAX_KEPT = 1000
_READ_AHEAD = 64  # rows read at a time past skipped records
_BUDGETED_BATCH, _BUDGETED_BATCH_MAX = 4, 16  # rows read at a time under a page budget
_REASON_CHARS = 200


def _dotted(loc: list[str | int], most: int = 8) -> str:
    shown = ".".join(str(part) for part in loc[:most])
    return shown + ("..." if len(loc) > most else "")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, _TooDeep):
        return f"nests deeper than {MAX_RECORD_DEPTH} levels (at {_dotted(exc.loc)})"
    if isinstance(exc, RecursionError):
        return f"nests deeper than the JSON parser takes (more than {MAX_RECORD_DEPTH} levels)"
    if isinstance(exc, json.JSONDecodeError):
        return f"is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, KeyError):
        return f"lacks the field {exc.args[0]!r}" if exc.args else "lacks a field"
    return f"does not decode: {type(exc).__name__}: {exc}"[:_REASON_CHARS]


class _TooDeep(Exception):
    def __init__(self, loc: list[str | int]):
        super().__init__()
        self.loc = loc


def _bounded(value: Any) -> Any:
    if (loc := first_too_deep(value)) is not None:
        raise _TooDeep(loc)
    return value


def parse(text: str) -> Any:
    """JSON text as a value that can be served; raises when it can't be."""
    try:
        # pydantic-core's parser, about twice as fast as the standard one on a page of tasks.
        value = pydantic_core.from_json(text)
    except ValueError:
        # What it refuses and the standard one reads (a lone surrogate, which the stores'
        # writers escape; nesting past its 200 levels), or the standard error to report.
        value = json.loads(text)
    # Nesting needs an opening bracket per level: most records have too few to matter.
    return _bounded(value) if text.count("{") + text.count("[") > MAX_RECORD_DEPTH else value


class RecordReader:
    """One per store: decodes its records and keeps those that can't be served.

    Thread-safe: SqliteStore reads on its worker thread, diagnostics on the event loop."""

    def __init__(self) -> None:
        self._unreadable: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._full = False

    # -- decoding ------------------------------------------------------------------
    def load(self, store: str, record_id: str, text: str, build: Callable[[Any], T]) -> T:
        """The record made by ``build`` from the JSON ``text``, or UnreadableRecordError."""
        try:
            record = build(parse(text))
        except Exception as exc:  # whatever stops it, the record can't be served
            raise self._unreadable_error(store, record_id, exc) from None
        if self._unreadable:
            self._forget(store, record_id)
        return record

    def skip(self, store: str, record_id: str, text: str, build: Callable[[Any], T]) -> T | None:
        """``load``, with None for a record a list skips (a list reads many: no detour)."""
        try:
            record = build(parse(text))
        except Exception as exc:
            self._unreadable_error(store, record_id, exc)
            return None
        if self._unreadable:
            self._forget(store, record_id)
        return record

    def problem(self, store: str, record_id: str, to_json: Callable[[], Any]) -> str | None:
        """Why a record kept as an object (the in-memory store) can't be served, or None
        when it can: its JSON form must nest at most ``MAX_RECORD_DEPTH`` levels."""
        try:
            _bounded(to_json())
        except Exception as exc:
            return str(self._unreadable_error(store, record_id, exc).data["reason"])
        if self._unreadable:
            self._forget(store, record_id)
        return None

    def require(self, store: str, record_id: str, to_json: Callable[[], Any]) -> None:
        """``problem`` for a single read: UnreadableRecordError when it can't be served."""
        if (reason := self.problem(store, record_id, to_json)) is not None:
            raise UnreadableRecordError(store, record_id, reason)

    # -- what was found ------------------------------------------------------------
    def report(self) -> list[dict[str, str]]:
        """The records found that can't be served, in the order found."""
        with self._lock:
            entries = list(self._unreadable.items())
        return [{"store": store, "id": record_id, "reason": reason} for (store, record_id), reason in entries]

    def _unreadable_error(self, store: str, record_id: str, exc: BaseException) -> UnreadableRecordError:
        reason = _reason(exc)
        key = (store, record_id)
        new = now_full = False
        with self._lock:
            if key not in self._unreadable and len(self._unreadable) < MAX_KEPT:
                self._unreadable[key] = reason
                new = True
            elif key not in self._unreadable and not self._full:
                self._full = now_full = True
        if new:  # once per record and process: a list that meets it again says nothing more
            logger.warning("stored record can't be served: %s %s (%s); lists skip it", store, record_id, reason)
        elif now_full:
            logger.warning("more than %d stored records can't be served; lists skip the others without a word",
                           MAX_KEPT)
        return UnreadableRecordError(store, record_id, reason)

    def _forget(self, store: str, record_id: str) -> None:
        """A record that was rewritten and now reads well."""
        with self._lock:
            self._unreadable.pop((store, record_id), None)


def as_is(value: Any) -> Any:
    """The ``build`` of a record that is its JSON value."""
    return value


def fill(fetch: Callable[[int | None, int], list[R]], decode: Callable[[R], T | None],
         before: int | None, limit: int, budget: PageBudget | None = None) -> list[tuple[int, T]]:
    """Up to ``limit`` (position, record) pairs, newest first, from ``fetch(before,
    n)`` (the next ``n`` rows below position ``before``, each row's position first, its
    stored JSON last), reading on past the rows ``decode`` skips so a page is as full as
    the records allow. The first read is exactly the page; only after a skip are rows
    read ahead, a batch at a time. Under a ``budget`` the reads are of a few rows, so
    what is read before the page ends is bounded too."""
    found: list[tuple[int, T]] = []
    batch = _first_batch(limit, budget)
    while (step := _take(fetch(before, batch), batch, decode, found, limit, budget)) is not None:
        before, batch = step
    return found


async def fill_async(fetch: Callable[[int | None, int], Awaitable[list[R]]], decode: Callable[[R], T | None],
                     before: int | None, limit: int, budget: PageBudget | None = None) -> list[tuple[int, T]]:
    """``fill`` for a store whose reads are awaited (PostgreSQL)."""
    found: list[tuple[int, T]] = []
    batch = _first_batch(limit, budget)
    while (step := _take(await fetch(before, batch), batch, decode, found, limit, budget)) is not None:
        before, batch = step
    return found


def _first_batch(limit: int, budget: PageBudget | None) -> int:
    return limit if budget is None else min(limit, _BUDGETED_BATCH)


def _take(rows: list[R], batch: int, decode: Callable[[R], T | None], found: list[tuple[int, T]],
          limit: int, budget: PageBudget | None) -> tuple[int, int] | None:
    """Adds the records of one read of ``batch`` rows to ``found``; the next read's
    ``(before, batch)``, or ``None`` once the page is full (or over its budget) or the
    rows ran out."""
    for i, row in enumerate(rows):
        if (record := decode(row)) is not None:
            found.append((row[0], record))  # type: ignore[index]
            if len(found) == limit:
                return None
            if budget is not None and not budget.spend(len(row[-1])):  # type: ignore[index]
                budget.ended_early = i + 1 < len(rows) or len(rows) == batch  # else the rows ran out here
                return None
    if len(rows) < batch:
        return None
    if budget is not None:  # reads grow, but stay a few rows: each row may be megabytes
        return rows[-1][0], min(limit - len(found), 2 * batch, _BUDGETED_BATCH_MAX)  # type: ignore[index]
    return rows[-1][0], max(limit - len(found), _READ_AHEAD)  # type: ignore[index]


def kept(rows: Iterable[tuple[str, str]], store: str, reader: RecordReader,
         build: Callable[[Any], T]) -> list[T]:
    """The records of ``(id, text)`` rows that can be served, in order."""
    return [record for record_id, text in rows
            if (record := reader.skip(store, record_id, text, build)) is not None]
