"""Start-up work that runs once, on first need: whoever asks first starts it, everyone
waits for the same run, and a caller that is cancelled doesn't cancel it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


class RunOnce:
    """``may_run`` (blocking; run in a worker thread) can veto the work: start-up
    repair belongs to the one process that owns the state, not to every process."""

    def __init__(self, work: Callable[[], Awaitable[None]], may_run: Callable[[], bool] | None = None):
        self._work = work
        self._may_run = may_run
        self._run: asyncio.Future[None] | None = None

    async def __call__(self) -> None:
        if (run := self._run) is not None and run.done():
            run.result()  # what awaiting it would give, without a shield per call
            return
        if self._run is None:
            self._run = asyncio.ensure_future(self._guarded())
        await asyncio.shield(self._run)

    async def _guarded(self) -> None:
        if self._may_run is not None and not await asyncio.to_thread(self._may_run):
            logger.info("%s skipped: another process owns the state", getattr(self._work, "__qualname__", "start-up work"))
            return
        await self._work()
