"""Garbage-collector settings for a serving process.

A request allocates many short-lived objects while the task store keeps many
long-lived ones. With CPython's default thresholds (700, 10, 10) a young collection
runs every few requests and older ones keep rescanning the stored tasks: about 15%
of a SendMessage's time (benchmarks/bench_tasks.py). Freezing what start-up made and
collecting less often spends a little memory instead.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # allocations between young collections (CPython's default: 700)


def tune_for_serving() -> None:
    """Call once the server is built, before it takes requests."""
    # Start-up's objects (modules, the loaded server) are never scanned again. No
    # collection first: it would delay the first request by about 15 ms.
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
