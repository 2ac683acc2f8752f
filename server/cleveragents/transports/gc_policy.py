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
millisecond kept it to 4 and 18 ms, for no measurable loss of throughput.
"""

from __future__ import annotations

import gc
import sys

YOUNG_THRESHOLD = 10_000  # allocations between young collections (CPython's default: 700)
SWITCH_INTERVAL = 0.001  # seconds a thread holds the GIL while others wait (CPython's default: 0.005)


def tune_for_serving() -> None:
    """Call once the server is built, before it takes requests."""
    # Start-up's objects (modules, the loaded server) are never scanned again. No
    # collection first: it would delay the first request by about 15 ms.
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    sys.setswitchinterval(SWITCH_INTERVAL)
