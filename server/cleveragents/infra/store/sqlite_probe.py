"""The SQLite store's health before the store has loaded.

``SqliteProbe`` opens the store's file as ``SqliteStore`` does (``sqlite_schema``:
created, WAL, migrated) without importing the store or the models, and answers the
health check's ping on it. The stdio server answers health checks with it while its
services load (``transports/lsp/early.py``); once they are up, the store has the
file and the probe's connection is closed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cleveragents.infra.state_dir import prepare_state_dir
from cleveragents.infra.store.sqlite_schema import DB_FILENAME, MIGRATIONS, connect


class SqliteProbe:
    backend = "sqlite"

    def __init__(self, conn: sqlite3.Connection):
        self._conn: sqlite3.Connection | None = conn

    @classmethod
    def open_in(cls, state_dir: Path) -> SqliteProbe:
        """Open (creating) ``state_dir/state.db``, as the store would; blocking."""
        return cls(connect(str(prepare_state_dir(state_dir) / DB_FILENAME)))

    @property
    def schema_version(self) -> int:
        return len(MIGRATIONS)

    async def ping(self) -> dict[str, object]:
        if self._conn is None:
            raise RuntimeError("the store is closed")
        self._conn.execute("SELECT 1").fetchone()  # touches no file and takes no lock: can't block
        return {"ok": True, "backend": self.backend, "schema_version": self.schema_version}

    async def check(self) -> dict[str, object]:
        raise RuntimeError("the store's checks wait for the store to load")

    def unreadable_records(self) -> list[dict[str, str]]:
        return []  # no record has been read through it

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
