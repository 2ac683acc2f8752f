"""SendMessage into one context of 1,000, 10,000 and 100,000 tasks: does a send cost the
same however many tasks its context holds?

Run by hand:  .venv/bin/python benchmarks/bench_send_context.py [--quick] [--json FILE]
              (a full run takes about 30 seconds on 2 CPUs)

Each size gets its own workspace. Its SQLite store (``.cleveragents/state.db``, where
the server opens it by default) is filled through the task repository, in batches
that the store's group commit writes in one transaction each: completed tasks, all in
one context, none waiting for input. Then one ``cleveragents-lsp`` per workspace (the
default configuration: SQLite store, local actor; the retention cap raised so nothing
is evicted) answers SendMessage into that context, sequentially: send one, wait for
its answer. Each round times ``sends`` messages per size, in alternating size order,
so a busy machine slows every size alike; a round's figure is the median of its sends.
The message is plain text, which the local actor answers with its introduction. The
baseline is the smallest context, measured in the same run and paired per round: the
figure is the median of the rounds' ratios, with the worst round's beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_stdio import Conn
from bench_tasks import spawn, stop
from targets import paired, paired_info, target

from cleveragents.domain.task import Message, Part, Role, Task, TaskState, TaskStatus
from cleveragents.ids import new_id, utc_now
from cleveragents.infra.store.sqlite import SqliteStore

SERVER = [sys.executable, "-m", "cleveragents.transports.lsp"]
CONTEXT = "ctx-bench"
BATCH = 256  # the group commit's largest batch (sqlite_batch.MAX_BATCH)
FULL = {"sizes": [1_000, 10_000, 100_000], "rounds": 7, "sends": 30, "warmup": 10}
QUICK = {"sizes": [1_000, 10_000, 100_000], "rounds": 3, "sends": 10, "warmup": 5}
RATIO_TARGET = 1.2  # the largest context / the smallest, at most


def finished_task(i: int) -> Task:
    task_id = new_id()
    question = Message(new_id(), Role.USER, (Part.of_text(f"question {i}"),), CONTEXT, task_id)
    answer = Message(new_id(), Role.AGENT, (Part.of_text(f"answer {i}"),), CONTEXT, task_id)
    return Task(task_id, CONTEXT, TaskStatus(TaskState.COMPLETED, utc_now()), (question, answer))


async def seed(state_dir: Path, size: int) -> float:
    """``size`` finished tasks in one context, ``BATCH`` adds at a time; seconds taken."""
    started = time.perf_counter()
    store = SqliteStore.open_in(state_dir, terminal_cap=size * 2)
    try:
        for start in range(0, size, BATCH):
            batch = [finished_task(i) for i in range(start, min(start + BATCH, size))]
            await asyncio.gather(*(store.tasks.add_task(task) for task in batch))  # one transaction
        assert await store.tasks.count_tasks(context_id=CONTEXT) == size
    finally:
        await store.close()
    return time.perf_counter() - started


async def send(conn: Conn) -> float:
    """One SendMessage into the context; milliseconds until its answer."""
    message = {"role": "ROLE_USER", "messageId": new_id(), "contextId": CONTEXT, "parts": [{"text": "hello"}]}
    started = time.perf_counter_ns()
    answer = await conn.call("SendMessage", {"message": message})
    elapsed = (time.perf_counter_ns() - started) / 1e6
    task = answer["result"].get("task", answer["result"])
    assert task.get("contextId") == CONTEXT, answer
    return elapsed


async def measure(cfg: dict[str, Any]) -> dict[str, Any]:
    sizes = cfg["sizes"]
    out: dict[str, Any] = {"sizes": sizes, "seed_s": {}, "rounds": {size: [] for size in sizes}, "exits": []}
    with tempfile.TemporaryDirectory(prefix="bench-send-context-") as tmp:
        for size in sizes:
            print(f"... seeding one context with {size:,} tasks", file=sys.stderr, flush=True)
            out["seed_s"][size] = await seed(Path(tmp) / str(size) / ".cleveragents", size)
        cap = max(sizes) * 2
        conns = {size: await spawn([*SERVER, "--max-terminal-tasks", str(cap)], str(Path(tmp) / str(size)))
                 for size in sizes}
        try:
            for conn in conns.values():
                for _ in range(cfg["warmup"]):  # not counted: first calls pay one-off costs
                    await send(conn)
            for n in range(cfg["rounds"]):
                order = sizes if n % 2 == 0 else list(reversed(sizes))  # no size always goes first
                for size in order:
                    sends = [await send(conns[size]) for _ in range(cfg["sends"])]
                    out["rounds"][size].append(statistics.median(sends))
                print(f"  round {n + 1}/{cfg['rounds']}: " + ", ".join(
                    f"{size:,}: {out['rounds'][size][-1]:.2f} ms" for size in sizes), file=sys.stderr, flush=True)
        finally:
            for conn in conns.values():
                out["exits"].append(await stop(conn))
    return out


def report(result: dict[str, Any]) -> dict[str, Any]:
    sizes = result["sizes"]
    first, last = sizes[0], sizes[-1]
    med = {size: statistics.median(result["rounds"][size]) for size in sizes}
    worst = {size: max(result["rounds"][size]) for size in sizes}
    pairs = {size: paired(result["rounds"][size], result["rounds"][first], "lower") for size in sizes}
    ratio, worst_ratio = pairs[last]["value"], pairs[last]["worst"]
    rows = [["SendMessage into one context", *(f"{size:,} tasks" for size in sizes)],
            ["median round (ms)", *(f"{med[s]:.2f}" for s in sizes)],
            ["worst round (ms)", *(f"{worst[s]:.2f}" for s in sizes)],
            [f"/ {first:,} tasks, same round: median", *(f"{pairs[s]['value']:.2f}x" for s in sizes)],
            [f"/ {first:,} tasks, same round: worst", *(f"{pairs[s]['worst']:.2f}x" for s in sizes)]]
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))
    seeded = ", ".join(f"{size:,} in {seconds:.1f} s" for size, seconds in result["seed_s"].items())
    clean = all(code == 0 for code in result["exits"])
    print(f"seeding: {seeded}; clean exits: {'PASS' if clean else 'FAIL'}")
    print(f"target: median {last:,}/{first:,} <= {RATIO_TARGET}: {'PASS' if ratio <= RATIO_TARGET else 'FAIL'} "
          f"(worst round {worst_ratio:.2f})")
    name = f"SendMessage into one context, {last:,} / {first:,} tasks"
    targets = [target(name, ratio, "<=", RATIO_TARGET, ours=pairs[last]["ours"], baseline=pairs[last]["baseline"],
                      unit="ms", worst=worst_ratio),
               target("servers without a clean exit", sum(code != 0 for code in result["exits"]), "<=", 0)]
    figures = [paired_info(f"SendMessage into one context, {size:,} / {first:,} tasks", result["rounds"][size],
                           result["rounds"][first], unit="ms") for size in sizes[1:-1]]
    return {"median_ms": med, "worst_ms": worst, "ratio": ratio, "worst_ratio": worst_ratio,
            "targets": targets, "figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sends, for a smoke run")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    print(f"bench_send_context: python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {cfg}", file=sys.stderr)
    result = asyncio.run(measure(cfg))
    summary = report(result)
    if args.json:
        args.json.write_text(json.dumps({"settings": cfg, **result, **summary}, indent=1, default=str))
    return 0  # a report, not a gate


if __name__ == "__main__":
    sys.exit(main())
