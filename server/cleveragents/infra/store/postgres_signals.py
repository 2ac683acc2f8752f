"""What replicas on one PostgreSQL database tell each other, over ``LISTEN``/``NOTIFY``:
for now, "cancel this task" (``app.peer_cancel``). No second service is needed.

Each replica listens on the connection that holds its liveness lock (``postgres.py``),
which does nothing else; a notification is sent from the pool, committed at once
(autocommit), and reaches every replica listening on the database, the sender too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from cleveragents.infra.store._pg import Connection, Database

logger = logging.getLogger(__name__)

CANCEL_CHANNEL = "cleveragents_cancel"
EVENTS_CHANNEL = "cleveragents_events"  # postgres_events.py: a replica wrote a task's events


class PostgresPeers:
    def __init__(self, db: Database):
        self._db = db
        self._handlers: dict[str, list[Callable[[str], None]]] = {CANCEL_CHANNEL: [], EVENTS_CHANNEL: []}
        self._listening: asyncio.Task[None] | None = None

    async def ask_cancel(self, task_id: str) -> None:
        async with self._db.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (CANCEL_CHANNEL, task_id))

    def on_cancel(self, handler: Callable[[str], None]) -> None:
        self._handlers[CANCEL_CHANNEL].append(handler)

    def on_events(self, handler: Callable[[str], None]) -> None:
        """``handler(task_id)`` when a replica wrote events of that task."""
        self._handlers[EVENTS_CHANNEL].append(handler)

    async def listen(self, conn: Connection) -> None:
        """Start taking notifications on ``conn`` (a connection of its own)."""
        await conn.execute(f"LISTEN {CANCEL_CHANNEL}")
        await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
        self._listening = asyncio.ensure_future(self._take(conn))

    async def _take(self, conn: Connection) -> None:
        try:
            async for notice in conn.notifies():
                for handler in self._handlers.get(notice.channel, ()):
                    try:
                        handler(notice.payload)
                    except Exception:  # one handler's bug must not stop the others
                        logger.exception("a %s handler failed for task %s", notice.channel, notice.payload)
        except Exception as exc:  # the connection is gone: so is this replica, for its peers
            logger.warning("stopped listening to the other replicas: %s", exc)

    async def close(self) -> None:
        if self._listening is not None:
            listening, self._listening = self._listening, None
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listening
