"""The store engines every store contract test runs on: the SQLite file, the in-memory
store, and PostgreSQL (a real server, ``tests/postgres_server.py``; those cases skip
where none can be started, and fail under CI=true)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

STORE_KINDS = ["sqlite", "memory", "postgresql"]


def open_store(kind: str, request: pytest.FixtureRequest, state_dir: Path, **options: Any) -> Any:
    """A new, empty store of ``kind``; for PostgreSQL, on a database of its own."""
    if kind == "sqlite":
        from cleveragents.infra.store.sqlite import SqliteStore

        return SqliteStore.open_in(state_dir, **options)
    if kind == "memory":
        from cleveragents.infra.store.memory import MemoryStore

        return MemoryStore(**options)
    from cleveragents.infra.store.postgres import PostgresStore

    return PostgresStore(request.getfixturevalue("postgres").new_database(), **options)
