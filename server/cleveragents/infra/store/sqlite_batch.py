"""Group commit for the SQLite store: the operations that wait for its thread run
together, in one transaction, each in its own savepoint.

One thread owns the connection. Each hop to it and back costs far more than a small
write (a thread wake-up each way, then the GIL), and so does each commit; under load
they were most of a task's cost. Operations queue here; the first one schedules a run
on the thread, and that run takes everything queued by then (up to ``MAX_BATCH``), in
order. An operation alone runs as it is, in its own transaction. Several run inside
``BEGIN IMMEDIATE ... COMMIT``, each between ``SAVEPOINT`` and ``RELEASE``: one that
raises is rolled back alone and gets its exception, the others go on. Results are
handed back after the ``COMMIT``, so an answer still means the write is stored. If the
commit fails, or SQLite rolls the whole transaction back (a full disk), every
operation of the batch that had succeeded gets that error instead.

A read that can't wait on the disk or on a lock (the health check's ``SELECT 1``)
may run at once on the caller's thread instead (``run_now_if_idle``) when nothing is
queued or running: the hop to the thread and back would be most of its time. When
something is, ``busy_for`` says how long the batch on the thread has been running, so
a health check can tell a store at work from a stuck one without queueing behind it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

MAX_BATCH = 256
T = TypeVar("T")

Operation = tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future[Any], asyncio.AbstractEventLoop]


class GroupCommit:
    def __init__(self, executor: Executor, connection: Callable[[], sqlite3.Connection]):
        self._executor = executor
        self._connection = connection
        self._lock = threading.Lock()
        self._queued: list[Operation] = []
        self._scheduled = False
        # Held while the connection is in use: a batch on the thread, ``run_now_if_idle``,
        # or the store's own work on it (closing).
        self.in_use = threading.Lock()
        # Run on the connection after a batch's operations, inside its transaction.
        self.before_commit: list[Callable[[sqlite3.Connection], None]] = []
        # Run on the store's thread once a batch is over (committed or not).
        self.after_batch: list[Callable[[], None]] = []
        self._batch_started: float | None = None  # monotonic; set while a batch runs

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._queued.append((fn, args, future, loop))
            schedule = not self._scheduled
            self._scheduled = True
        if schedule:
            self._executor.submit(self._drain)
        return await future

    def run_now_if_idle(self, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """``(True, fn())`` run on this thread when nothing is queued and the connection
        is free; else ``(False, None)`` and nothing ran. Only for what can't block."""
        with self._lock:
            if self._queued or self._scheduled or not self.in_use.acquire(blocking=False):
                return False, None
        try:
            return True, fn()
        finally:
            self.in_use.release()

    def busy_for(self) -> float:
        """Seconds the batch on the store's thread has been running; 0 when none is
        (what is queued starts as soon as the thread takes it)."""
        started = self._batch_started
        return 0.0 if started is None else time.monotonic() - started

    def _drain(self) -> None:
        with self._lock:
            batch, self._queued = self._queued[:MAX_BATCH], self._queued[MAX_BATCH:]
            more = bool(self._queued)
            self._scheduled = more
        if more:
            self._executor.submit(self._drain)
        # A caller cancelled before its operation starts doesn't get it run (as with an
        # executor job not yet started): a request cut short must not leave half its work.
        batch = [operation for operation in batch if not operation[2].cancelled()]
        if not batch:
            return
        with self.in_use:
            self._batch_started = time.monotonic()
            try:
                outcomes = self._execute(batch)
            finally:
                self._batch_started = None
        for hook in self.after_batch:
            hook()
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
        for (_, _, future, loop), outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, *outcome))
        for loop, settled in by_loop.items():
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, settled)

    def _execute(self, batch: list[Operation]) -> list[tuple[bool, Any]]:
        """``(ok, result or exception)`` for each operation."""
        if len(batch) == 1:
            fn, args, _, _ = batch[0]
            return [_call(fn, args)]
        outcomes: list[tuple[bool, Any]] = []
        db: sqlite3.Connection | None = None
        try:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            for fn, args, _, _ in batch:
                db.execute("SAVEPOINT operation")
                ok, value = _call(fn, args)
                if ok:
                    db.execute("RELEASE operation")
                elif db.in_transaction:
                    db.execute("ROLLBACK TO operation")
                    db.execute("RELEASE operation")
                else:  # SQLite gave up the whole transaction: what succeeded in it is gone
                    outcomes = _failed(outcomes, value)
                    db.execute("BEGIN IMMEDIATE")
                outcomes.append((ok, value))
            for hook in self.before_commit:
                hook(db)
            db.execute("COMMIT")
        except Exception as exc:
            if db is not None and db.in_transaction:
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            return _failed(outcomes, exc) + [(False, exc)] * (len(batch) - len(outcomes))
        return outcomes


def _failed(outcomes: list[tuple[bool, Any]], exc: Exception) -> list[tuple[bool, Any]]:
    return [(False, exc) if ok else (ok, value) for ok, value in outcomes]


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    try:
        return True, fn(*args)
    except Exception as exc:
        return False, exc


def _settle(settled: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in settled:
        if future.done():  # its caller was cancelled while the operation ran
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
