"""The worker threads that run a publisher's synchronous code (handlers, tools).

A pool of their own: asyncio's default pool has only a few threads on a small
machine, and a handler that blocks for long must neither queue the other tasks'
handlers nor starve the server's own file I/O.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
MAX_THREADS = 64

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="agent-code")
        return _pool


async def run_user_code(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    call = functools.partial(fn, *args, **kwargs) if kwargs else functools.partial(fn, *args)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)
