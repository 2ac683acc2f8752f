"""CancelTask and SubscribeToTask for a task that another process runs, when several
share one store.

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
from collections.abc import AsyncIterator

from cleveragents.app.ports import PeerSignals, SharedTaskEvents, TaskRepository
from cleveragents.domain.task import StreamEvent, Task, TaskState

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


ULID_ZERO = "0" * 26  # before every event: resuming from it replays all that is stored


async def follow_elsewhere(events: SharedTaskEvents, tasks: TaskRepository, task: Task,
                           last_event_id: str | None) -> AsyncIterator[StreamEvent]:
    """A stream of a task another process runs: the task (at the latest stored event's
    id) unless the client resumes, then the events as they are stored."""
    if last_event_id is None:
        after = await events.latest_event_id(task.id) or ULID_ZERO
        yield StreamEvent(after, task)
    else:
        after = last_event_id

    async def running() -> bool:
        stored = await tasks.get_task(task.id)
        return stored is not None and stored.state in RUNNING_STATES

    async for event in events.follow(task.id, after, running):
        yield event
