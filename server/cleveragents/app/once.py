"""Start-up work that runs once, on first need: whoever asks first starts it, everyone
waits for the same run, and a caller that is cancelled doesn't cancel it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class RunOnce:
    def __init__(self, work: Callable[[], Awaitable[None]]):
        self._work = work
        self._run: asyncio.Future[None] | None = None

    async def __call__(self) -> None:
        if self._run is None:
            self._run = asyncio.ensure_future(self._work())
        await asyncio.shield(self._run)
