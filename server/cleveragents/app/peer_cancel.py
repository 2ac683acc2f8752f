"""CancelTask for a task that another process runs, when several share one store.

The process that gets the request can't stop a run it doesn't hold, and must not store
"canceled" under a run that goes on (the run's own last write would replace it). It
asks its peers instead (``PeerSignals``: PostgreSQL's ``NOTIFY``); the one that runs the
task cancels it as if asked directly, and stores the cancel. The asking side waits for
that, a bounded time; with no answer (no peer runs it any longer) it cancels in the
store itself, as for a task that isn't running.
"""

from __future__ import annotations

import asyncio
import time

from cleveragents.app.ports import PeerSignals, TaskRepository
from cleveragents.domain.task import Task, TaskState

PEER_CANCEL_WAIT = 5.0  # seconds the asking process waits for the runner's cancel
_POLL = 0.05
RUNNING_STATES = (TaskState.SUBMITTED, TaskState.WORKING)


async def cancel_through_peer(peers: PeerSignals, tasks: TaskRepository, task: Task,
                              wait: float = PEER_CANCEL_WAIT) -> Task | None:
    """The task as its runner left it once it is terminal; ``None`` when it isn't
    running (nothing to ask) or no peer answered in time."""
    if task.state not in RUNNING_STATES:
        return None
    await peers.ask_cancel(task.id)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        await asyncio.sleep(_POLL)
        stored = await tasks.get_task(task.id)
        if stored is None or stored.terminal:
            return stored
    return None
