"""Interpreter settings for a serving process: the garbage collector and the GIL.

A request allocates many short-lived objects while the task store keeps many
long-lived ones. With CPython's default thresholds (700, 10, 10) a young collection
runs every few requests and older ones keep rescanning the stored tasks: about 15%
of a SendMessage's time (benchmarks/bench_tasks.py). Freezing what start-up made and
collecting less often spends a little memory instead.

Work in worker threads (a plan's diff, a tool, a big answer's encoding) runs Python
code that holds the GIL, and the event loop waits for each turn of it: by default a
thread gives the GIL up after 5 ms, and with three such threads the loop waited 26 ms
at the median, over 100 ms at the 95th percentile. Threads that switch every
millisecond kept it to 4 and 18 ms, for no measurable loss of throughput. The same holds
while the stdio server starts: its services' modules load in a worker thread while the
first health checks are answered, so the shorter interval is set before that (a health
check's p99 over the first 2,000 went from 11 to 4 ms, and the services were up about
150 ms sooner).
"""

from __future__ import annotations

import gc
import sys

YOUNG_THRESHOLD = 10_000  # allocations between young collections (CPython's default: 700)
SWITCH_INTERVAL = 0.001  # seconds a thread holds the GIL while others wait (CPython's default: 0.005)


def share_the_gil() -> None:
    """Call before anything runs in a worker thread: the services' modules load in one
    while the first requests are answered (health checks, ``transports/lsp/early_health.py``)."""
    sys.setswitchinterval(SWITCH_INTERVAL)


def tune_for_serving() -> None:
    """Call once the server is built, before it takes requests."""
    # Start-up's objects (modules, the loaded server) are never scanned again. No
    # collection first: it would delay the first request by about 15 ms.
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    share_the_gil()
