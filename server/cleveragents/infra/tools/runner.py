"""Running tool calls: never on the event loop, and each within its time limit.

A call runs in a pool of threads of its own, so slow tool work never queues the
server's own file I/O (the default executor) or other pools, and those threads run at
a lower CPU priority than the event loop's, so tool work never starves the answers.
Its context gets a deadline (``ToolContext.start_clock``) that the tool's loops check;
past it the tool raises ``ToolTimeoutError``, which names the limit. A tool that does
not look in time (stuck in a call that never returns) is given up on ``GRACE``
seconds after the deadline: the call fails the same way, and the thread is left to
end on its own, its result dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cleveragents.config import DEFAULT_TOOL_TIMEOUT
from cleveragents.domain.tools import Tool, ToolContext, ToolResult

logger = logging.getLogger(__name__)

GRACE = 5.0  # seconds past the deadline before a call that does not stop is given up on
MAX_WORKERS = 8
NICE = 10  # how much lower than the server's the tool threads' CPU priority is (Linux)


class ToolRunner:
    """``await runner.call(tool, arguments, context)``: the tool's result, or its error."""

    def __init__(self, time_limit: float | None = DEFAULT_TOOL_TIMEOUT, *, max_workers: int = MAX_WORKERS,
                 name: str = "tool"):
        self.time_limit = time_limit
        self._max_workers = max_workers
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix=self._name,
                                                initializer=_lower_priority)
            return self._pool

    async def call(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        context.start_clock(self.time_limit, tool.name)
        future = asyncio.get_running_loop().run_in_executor(self._executor(), tool.run, arguments, context)
        remaining = context.remaining()
        if remaining is None:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), remaining + GRACE)
        except asyncio.CancelledError:
            future.cancel()  # what the tool returns once it stops is dropped, not left unretrieved
            raise
        except asyncio.TimeoutError:
            # A call still queued never starts; a running one is left to end, its result dropped.
            future.cancel()
            logger.warning("%s did not stop at its time limit of %s s: given up on", tool.name, context.time_limit)
            raise context.timeout_error() from None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _lower_priority() -> None:
    """Tool threads yield the CPU to the event loop's: a search runs mostly in RE2,
    outside the GIL, so four at once would otherwise take both cores of a small machine
    from the thread that answers requests. Linux sets a nice value per thread; elsewhere
    the threads keep the process's priority."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + NICE)
