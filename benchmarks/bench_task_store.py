"""Task-store benchmark: does a page of tasks cost the same at 1k and at 100k?

Run by hand:  .venv/bin/python benchmarks/bench_task_store.py [--sizes 1000,10000,100000]
              [--reps 201] [--stores sqlite,memory]      (a full run takes 2 to 3 minutes)

Each store kind (the SQLite file, the in-memory store) runs in its own child process,
so one kind's allocations never show in the other's memory figure. The child fills one
store per size with small terminal tasks (one short user message each, 10 contexts,
the retention cap raised to hold them all), then times the first page of
``list_tasks`` (limit 50) plus ``count_tasks``, the work behind one ListTasks call with
its totalSize. The repetitions go round-robin over the sizes, so a busy machine slows
every size alike; the figures are the median and the minimum, and the ratio is taken
per repetition (the largest size over the smallest), judged on its median with the
worst repetition beside it. The RSS growth is VmRSS
after filling the largest store minus before it (that store is filled first).

The send path (for information): what SendMessage asks of the store, 64 sends at a
time on a store already at the default cap of 10,000 terminal tasks, so every
completion evicts one: add the task submitted, then store it completed with a reply
and an artifact. The figure is the wall time per task over 5,000 tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from targets import info, paired_target, target

from cleveragents.domain.task import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from cleveragents.ids import new_id, utc_now
from cleveragents.infra.store.memory import MemoryStore
from cleveragents.infra.store.sqlite import DB_FILENAME, SqliteStore

CONTEXTS = 10  # so one context fills a page (50) even at the smallest size
PAGE = 50
WARMUP = 10
MIB = 1024 * 1024
RSS_TARGET_MIB = {"sqlite": 40.0}
RATIO_TARGET = 2.0  # "flat": room for noise, not for growth with the number of tasks
SEND_CAP, SEND_TASKS, SEND_DEPTH = 10_000, 5_000, 64
QUERIES = {  # label -> list/count filters
    "all tasks": {},
    "one context": {"context_id": "ctx-007"},
    "one state": {"states": [TaskState.COMPLETED]},
}


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def small_task(i: int) -> Task:
    task_id, context_id = new_id(), f"ctx-{i % CONTEXTS:03d}"
    question = Message(new_id(), Role.USER, (Part.of_text(f"task {i}"),), context_id, task_id)
    return Task(task_id, context_id, TaskStatus(TaskState.COMPLETED, utc_now()), (question,))


async def fill(store: Any, size: int) -> float:
    """Insert ``size`` tasks; the time per insert in microseconds."""
    started = time.perf_counter()
    for i in range(size):
        await store.add_task(small_task(i))
    assert await store.count_tasks() == size
    return (time.perf_counter() - started) * 1e6 / size


async def sends(store: Any, n: int) -> float:
    """``n`` tasks through the send path, ``SEND_DEPTH`` at a time; microseconds per task."""
    async def one() -> None:
        task_id, context_id = new_id(), new_id()
        question = Message(new_id(), Role.USER, (Part.of_text("hello"),), context_id, task_id)
        task = Task(task_id, context_id, TaskStatus(TaskState.SUBMITTED, utc_now()), (question,))
        await store.add_task(task)
        reply = Message(new_id(), Role.AGENT, (Part.of_text("hello"),), context_id, task_id)
        done = task.with_artifact(Artifact(f"{task_id}-response", (Part.of_text("hello"),), name="response"))
        await store.save_task(done.answered(reply, TaskState.COMPLETED, utc_now()))

    slots = asyncio.Semaphore(SEND_DEPTH)

    async def guarded() -> None:
        async with slots:
            await one()

    started = time.perf_counter()
    await asyncio.gather(*(guarded() for _ in range(n)))
    return (time.perf_counter() - started) * 1e6 / n


async def page_and_count(store: Any, filters: dict[str, Any]) -> float:
    started = time.perf_counter_ns()
    await store.list_tasks(**filters, limit=PAGE)
    await store.count_tasks(**filters)
    return (time.perf_counter_ns() - started) / 1000


async def worker(backend: str, sizes: list[int], reps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-task-store-") as tmp:
        def open_store(size: int, name: str = "") -> Any:
            if backend == "sqlite":
                return SqliteStore.open_in(Path(tmp) / (name or str(size)), terminal_cap=size)
            return MemoryStore(terminal_cap=size)

        largest = max(sizes)
        stores = {largest: open_store(largest)}
        baseline = rss_bytes()
        insert_us = await fill(stores[largest], largest)
        out: dict[str, Any] = {"backend": backend, "rss_growth_mib": (rss_bytes() - baseline) / MIB,
                               "insert_us": insert_us, "queries": {}, "samples": {}}
        for size in sizes:
            if size not in stores:
                stores[size] = open_store(size)
                await fill(stores[size], size)

        for label, filters in QUERIES.items():
            samples: dict[int, list[float]] = {size: [] for size in sizes}
            for rep in range(WARMUP + reps):
                for size in sizes:
                    elapsed = await page_and_count(stores[size], filters)
                    if rep >= WARMUP:
                        samples[size].append(elapsed)
            out["queries"][label] = {size: (statistics.median(s), min(s)) for size, s in samples.items()}
            out["samples"][label] = samples  # repetition by repetition, paired across sizes

        sending = open_store(SEND_CAP, "send")
        await sends(sending, SEND_CAP)  # to the cap: from here on every completion evicts
        out["send_us"] = await sends(sending, SEND_TASKS)
        assert await sending.count_tasks() == SEND_CAP
        await sending.close()
        for store in stores.values():
            await store.close()
        if backend == "sqlite":
            files = (Path(tmp) / str(largest)).glob(f"{DB_FILENAME}*")
            out["disk_mib"] = sum(path.stat().st_size for path in files) / MIB
        return out


def run_child(backend: str, sizes: list[int], reps: int) -> dict[str, Any]:
    print(f"... {backend}: filling stores of {', '.join(f'{s:,}' for s in sizes)} tasks", file=sys.stderr,
          flush=True)
    args = [sys.executable, __file__, "--worker", backend, "--sizes", ",".join(map(str, sizes)), "--reps", str(reps)]
    done = subprocess.run(args, check=True, capture_output=True, text=True, env=os.environ)
    result = json.loads(done.stdout)
    result["queries"] = {label: {int(size): tuple(figures) for size, figures in by_size.items()}
                         for label, by_size in result["queries"].items()}
    result["samples"] = {label: {int(size): times for size, times in by_size.items()}
                         for label, by_size in result["samples"].items()}
    return result


def figures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [info(f"{r['backend']}: send path at the {SEND_CAP:,} cap, {SEND_DEPTH} at a time (us per task)",
                 r["send_us"]) for r in results]


def report(results: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    first, last = sizes[0], sizes[-1]
    ratio_name = f"{last:,}/{first:,}"
    header = ["store", "page 50 + count", *(f"{size:,} (med / min)" for size in sizes), ratio_name]
    rows, ratios, targets = [header], [], []
    for result in results:
        for label, by_size in result["queries"].items():
            samples = result["samples"][label]
            targets.append(paired_target(f"{result['backend']} {label}, {ratio_name} tasks", samples[last],
                                         samples[first], "<=", RATIO_TARGET, unit="us"))
            ratios.append(targets[-1]["value"])
            cells = [f"{median:,.0f} / {low:,.0f} us" for median, low in (by_size[size] for size in sizes)]
            rows.append([result["backend"], label, *cells, f"{ratios[-1]:.2f}x"])
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    for i, row in enumerate(rows):
        cells = zip(row, widths, strict=True)
        print(" | ".join(cell.ljust(w) if c < 2 else cell.rjust(w) for c, (cell, w) in enumerate(cells)))
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    print()
    for result in results:
        backend, growth = result["backend"], result["rss_growth_mib"]
        limit = RSS_TARGET_MIB.get(backend)
        verdict = "" if limit is None else f" (target < {limit:.0f} MiB: {'PASS' if growth < limit else 'FAIL'})"
        if limit is not None:
            targets.append(target(f"{backend}: RSS growth holding {last:,} tasks (MiB)", growth, "<", limit))
        disk = f", {result['disk_mib']:.1f} MiB on disk" if "disk_mib" in result else ""
        print(f"{backend}: RSS growth holding {last:,} tasks: {growth:.1f} MiB{verdict}{disk}; "
              f"{result['insert_us']:.0f} us per add_task; send path at the {SEND_CAP:,} cap: "
              f"{result['send_us']:.0f} us per task")
    print(f"flat (every {ratio_name} median of per-repetition ratios <= {RATIO_TARGET}): "
          f"{'PASS' if all(r <= RATIO_TARGET for r in ratios) else 'FAIL'}")
    return targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="task counts to compare")
    parser.add_argument("--reps", type=int, default=201, help="timed repetitions per figure")
    parser.add_argument("--stores", default="sqlite,memory", help="which stores to measure")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    parser.add_argument("--worker", choices=["sqlite", "memory"], help=argparse.SUPPRESS)
    opts = parser.parse_args()
    sizes = sorted(int(size) for size in opts.sizes.split(","))
    if opts.worker:
        print(json.dumps(asyncio.run(worker(opts.worker, sizes, opts.reps))))
        return 0
    results = [run_child(backend, sizes, opts.reps) for backend in opts.stores.split(",")]
    targets = report(results, sizes)
    if opts.json:
        opts.json.write_text(json.dumps({"settings": {"sizes": sizes, "reps": opts.reps}, "results": results,
                                         "targets": targets, "figures": figures(results)}, indent=1))
    return 0  # a report, not a test


if __name__ == "__main__":
    sys.exit(main())
