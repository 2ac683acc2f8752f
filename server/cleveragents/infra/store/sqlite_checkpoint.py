"""WAL checkpoints for the SQLite store, on a thread and a connection of their own.

In WAL mode a commit appends to the ``-wal`` file and, with ``synchronous = NORMAL``,
does not wait for the disk. SQLite's automatic checkpoint copies the WAL back into the
database, and waits for the disk, inside the commit that crosses its threshold: that
commit, and every write queued behind it on the store's thread, waited for the fsync
(tens of milliseconds on a busy disk, about one commit in a few hundred).

Here the store's connection checkpoints automatically only past a far larger WAL (a
safety net), and a ``PASSIVE`` checkpoint runs on another connection, in a thread of
its own, after every ``CHECKPOINT_EVERY`` commits (a task's write is a few pages, so
about SQLite's own threshold of 1,000 pages, and a checkpoint of fewer pages costs
less). A passive checkpoint
takes no write lock, so commits go on meanwhile; the next write after a complete one
starts the WAL over. Durability is SQLite's either way: a commit is in the WAL when it
returns, and a killed process loses nothing committed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

logger = logging.getLogger(__name__)

CHECKPOINT_EVERY = 200  # commits
# The store's connection checkpoints by itself only past this many pages (64 MiB of
# 4 KiB pages): when the passive checkpoints can't keep up (a reader holding old pages).
SAFETY_NET_PAGES = 16384


class WalCheckpointer:
    def __init__(self, path: str):
        self._path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cleveragents-checkpoint")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._running = False
        self._closed = False
        self._commits = 0  # since the last checkpoint started

    def written(self) -> None:
        """After a commit, on the store's thread: start a checkpoint every
        ``CHECKPOINT_EVERY`` commits, unless one is running."""
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY:
            return
        with self._lock:
            if self._running or self._closed:
                return
            self._running = True
        self._commits = 0
        self._executor.submit(self._checkpoint)

    def _checkpoint(self) -> None:
        try:
            if self._conn is None:
                self._conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            busy, wal_pages, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            logger.debug("checkpoint: %s of %s WAL pages copied (busy: %s)", copied, wal_pages, busy)
        except sqlite3.Error as exc:  # the next one tries again; the safety net stays
            logger.warning("WAL checkpoint failed: %s", exc)
        finally:
            with self._lock:
                self._running = False

    def close(self) -> None:
        """Wait for a checkpoint in progress, and close the connection (blocking)."""
        with self._lock:
            self._closed = True
        self._executor.submit(self._close_connection).result()
        self._executor.shutdown(wait=True)

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
