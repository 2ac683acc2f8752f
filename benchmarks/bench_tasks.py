"""Agent-task benchmark: cleveragents-lsp as the README starts it (the SQLite store, the
default local actor) answering SendMessage on stdio, against stock pygls; and ListTasks
through the same server at 1,000 to 100,000 stored tasks.

Run by hand:  .venv/bin/python benchmarks/bench_tasks.py [--quick] [--json FILE]

The message is plain text ("hello"), which the local actor answers with its
introduction: no tool runs. For information, the same server with --memory (also a
target: in flight on the in-memory store) and a published echo agent with --memory
(``tests/e2e/agents/echo_agent.py``) are measured too. Every spawn gets its own empty
workspace. All servers are driven by bench_stdio.py's client, so any difference comes
from the servers. See benchmarks/README.md for what each figure means.
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

from bench_stdio import (
    HEALTH,
    INIT_PARAMS,
    SERVERS,
    SETTLE_SECONDS,
    TRACING_OFF,
    TRACING_OFF_TARGET,
    TRACING_ON,
    Conn,
    compile_our_bytecode,
    in_flight,
    percentile,
    timed_calls,
)
from bench_task_store import MIB, fill, rss_bytes
from targets import paired_info, paired_target, target

from cleveragents.infra.store.sqlite import SqliteStore

REPO = Path(__file__).resolve().parents[1]
ECHO = [sys.executable, str(REPO / "tests" / "e2e" / "agents" / "echo_agent.py")]
SERVER = SERVERS["cleveragents"]  # no --memory: the SQLite store under the workspace's .cleveragents/
BASELINE = SERVERS["bare pygls"]
OURS, MEMORY, ECHO_MEMORY, PYGLS = "cleveragents", "ours --memory", "echo agent --memory", "bare pygls"
NO_OTEL, TRACED = "ours, no otel", "ours, tracing on"  # tracing: see bench_stdio.py
# Plain text: the local actor answers it with its introduction, as a first message gets.
SEND = ("SendMessage", {"message": {"role": "ROLE_USER", "messageId": "bench", "parts": [{"text": "hello"}]}})
FULL = {"rounds": 3, "warmup": 100, "requests": 1000, "pipelined": 2000, "depth": 64,
        "sizes": [1_000, 10_000, 100_000], "list_reps": 101, "tracing_rounds": 5, "tracing_requests": 1000}
QUICK = {"rounds": 1, "warmup": 20, "requests": 200, "pipelined": 500, "depth": 64,
         "sizes": [1_000, 10_000], "list_reps": 21, "tracing_rounds": 3, "tracing_requests": 200}
P50_TARGET = 0.5  # SendMessage p50 / baseline p50, at most
THROUGHPUT_TARGET = 5.0  # SendMessage in-flight req/s / baseline in-flight req/s, at least
MEMORY_THROUGHPUT_TARGET = 10.0  # the same with --memory, at least
FLAT_TARGET = 2.0  # ListTasks at the largest size / at the smallest, at most
RSS_TARGET_MIB = 40.0
LIST_QUERIES = {"all tasks": {"pageSize": 50}, "one context": {"pageSize": 50, "contextId": "ctx-007"}}


async def spawn(cmd: list[str], cwd: str, env: dict[str, str] | None = None) -> Conn:
    proc = await asyncio.create_subprocess_exec(
        *cmd, cwd=cwd, env={**os.environ, **(env or {})}, limit=1 << 24,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    conn = Conn(proc)
    await conn.call("initialize", INIT_PARAMS)
    conn.send("initialized", {}, notify=True)
    return conn


async def stop(conn: Conn) -> int:
    await conn.call("shutdown")
    conn.send("exit", notify=True)
    await conn.drain()
    conn.proc.stdin.close()
    return await asyncio.wait_for(conn.proc.wait(), 30)


def server_rss_mib(conn: Conn) -> float:
    for line in Path(f"/proc/{conn.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS for the server")


async def load(cmd: list[str], method: str, params: Any, cfg: dict[str, Any],
               env: dict[str, str] | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as workdir:  # an empty store for every spawn
        started = time.perf_counter()
        conn = await spawn(cmd, workdir, env)
        await timed_calls(conn, method, params, 1)
        first_ms = (time.perf_counter() - started) * 1000  # what an editor's first message waits for
        await asyncio.sleep(SETTLE_SECONDS)  # a server at work, not one still loading (bench_stdio.py)
        await timed_calls(conn, method, params, cfg["warmup"])  # not counted: one-off costs
        latencies = await timed_calls(conn, method, params, cfg["requests"])
        rps = await in_flight(conn, method, params, cfg["pipelined"], cfg["depth"])
        code = await stop(conn)
    return {"first_ms": first_ms, "p50_us": percentile(latencies, 50), "p95_us": percentile(latencies, 95),
            "rps": rps, "exit": code}


async def round_trips(cfg: dict[str, Any]) -> dict[str, list[dict[str, float]]]:
    # The server unable to import opentelemetry is measured in ``tracing_pairs``, beside ours.
    servers = {OURS: (SERVER, *SEND), PYGLS: (BASELINE, HEALTH, {}), MEMORY: (SERVER + ["--memory"], *SEND),
               ECHO_MEMORY: (ECHO + ["--memory"], *SEND), TRACED: (SERVER, *SEND)}
    environments = {OURS: TRACING_OFF, TRACED: TRACING_ON}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    for i in range(cfg["rounds"]):
        order = list(servers) if i % 2 == 0 else list(reversed(servers))  # none always goes first
        for name in order:
            runs[name].append(await load(*servers[name], cfg, environments.get(name)))
            print(f"  round {i + 1}/{cfg['rounds']} {name}: {runs[name][-1]}", file=sys.stderr)
    return runs


async def tracing_pairs(cfg: dict[str, Any]) -> dict[str, list[float]]:
    """SendMessage p50 of ours (tracing off) and of the same server unable to import
    opentelemetry. The two differ by noise alone when tracing off costs nothing, yet
    spawned one after the other their ratio ranged from 0.92 to 1.46 within a run; so
    each round spawns both and sends to them in turn, one request each (the first of
    the two alternating), so that whatever the machine does meanwhile falls on both
    alike."""
    servers = {OURS: SERVER, NO_OTEL: SERVERS[NO_OTEL]}
    p50s: dict[str, list[float]] = {name: [] for name in servers}
    for i in range(cfg["tracing_rounds"]):
        with tempfile.TemporaryDirectory(prefix="bench-tasks-") as ours_dir, \
                tempfile.TemporaryDirectory(prefix="bench-tasks-") as baseline_dir:
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            workdirs = dict(zip(servers, (ours_dir, baseline_dir), strict=True))
            conns = {name: await spawn(servers[name], workdirs[name], TRACING_OFF) for name in order}
            for conn in conns.values():
                await timed_calls(conn, *SEND, 1)
            await asyncio.sleep(SETTLE_SECONDS)
            for conn in conns.values():
                await timed_calls(conn, *SEND, cfg["warmup"])
            latencies: dict[str, list[float]] = {name: [] for name in servers}
            for n in range(cfg["tracing_requests"]):
                for name in order if n % 2 == 0 else reversed(order):
                    latencies[name] += await timed_calls(conns[name], *SEND, 1)
            for name, conn in conns.items():
                p50s[name].append(percentile(latencies[name], 50))
                await stop(conn)
        print(f"  tracing round {i + 1}/{cfg['tracing_rounds']}: "
              + ", ".join(f"{name} {values[-1]:.0f} us" for name, values in p50s.items()), file=sys.stderr)
    return p50s


def fill_state(workspace: Path, size: int) -> dict[str, float]:
    """In a child process, so its RSS shows only this store: ``size`` small terminal
    tasks written to the SQLite store a server on ``workspace`` opens."""
    args = [sys.executable, __file__, "--fill", str(workspace), str(size)]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


async def fill_worker(workspace: Path, size: int) -> dict[str, float]:
    store = SqliteStore.open_in(workspace / ".cleveragents", terminal_cap=size)
    before = rss_bytes()
    insert_us = await fill(store, size)
    growth = (rss_bytes() - before) / MIB
    await store.close()
    return {"rss_growth_mib": growth, "insert_us": insert_us}


async def listing(cfg: dict[str, Any]) -> dict[str, Any]:
    sizes = cfg["sizes"]
    out: dict[str, Any] = {"sizes": sizes, "fills": {}, "queries": {}, "samples": {}, "server_rss_mib": {}}
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as tmp:
        for size in sizes:
            print(f"... filling a store with {size:,} tasks", file=sys.stderr, flush=True)
            (Path(tmp) / str(size)).mkdir()
            out["fills"][size] = fill_state(Path(tmp) / str(size), size)
        cap = {"CLEVERAGENTS_MAX_TERMINAL_TASKS": str(max(sizes))}  # keep every task
        conns = {size: await spawn(SERVER, str(Path(tmp) / str(size)), cap) for size in sizes}
        for label, params in LIST_QUERIES.items():
            samples: dict[int, list[float]] = {size: [] for size in sizes}
            for rep in range(10 + cfg["list_reps"]):  # round-robin: a busy machine slows every size alike
                for size, conn in conns.items():
                    (elapsed,) = await timed_calls(conn, "ListTasks", params, 1)
                    if rep >= 10:
                        samples[size].append(elapsed)
            out["queries"][label] = {size: (statistics.median(s), min(s)) for size, s in samples.items()}
            out["samples"][label] = samples  # call by call, paired across sizes
        for size, conn in conns.items():
            total = (await conn.call("ListTasks", {"pageSize": 1}))["result"]["totalSize"]
            assert total == size, f"the server on the {size:,} store lists {total:,} tasks"
            out["server_rss_mib"][size] = server_rss_mib(conn)
            await stop(conn)
    return out


def table(rows: list[list[str]]) -> None:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(trips: dict[str, list[dict[str, float]]], lists: dict[str, Any],
           tracing: dict[str, list[float]]) -> dict[str, Any]:
    def rounds(name: str, key: str) -> list[float]:
        return [r[key] for r in trips[name]]

    keys = ("p50_us", "p95_us", "rps")
    med = {name: {key: statistics.median(rounds(name, key)) for key in keys} for name in trips}
    print(f"\nround trips: SendMessage (\"hello\", the local actor's introduction) vs {PYGLS} trivial request "
          "(median over spawns; ratios paired per round)\n")
    trip_rows: dict[str, dict[str, dict[str, Any]]] = {
        name: {key: paired_info("", rounds(name, key), rounds(PYGLS, key), better="higher" if key == "rps" else "lower")
               for key in keys} for name in trips if name != PYGLS}
    table([["metric", *trips, *(f"{name} / {PYGLS}" for name in trip_rows)],
           *[[label, *(f"{med[name][key]:,.0f}" for name in trips),
              *(f"{trip_rows[name][key]['value']:.2f} (worst {trip_rows[name][key]['worst']:.2f})" for name in trip_rows)]
             for label, key in (("sequential p50 (us)", "p50_us"), ("sequential p95 (us)", "p95_us"),
                                ("64 in flight (req/s)", "rps"))]])
    print(f"{OURS} runs as the README starts it (SQLite store, local actor); the --memory rows are information,\n"
          f"except the in-flight figure of {MEMORY}, which has a target of its own")
    clean = all(r["exit"] == 0 for runs in trips.values() for r in runs)
    print(f"clean exits: {verdict(clean)}")

    sizes = lists["sizes"]
    first, last = sizes[0], sizes[-1]
    print("\nListTasks through the server, one page of 50 with totalSize (median / min, us)\n")
    flat = []
    rows = [["query", *(f"{size:,} tasks" for size in sizes), f"{last:,}/{first:,}"]]
    for label, by_size in lists["queries"].items():
        samples = lists["samples"][label]
        flat.append(paired_target(f"ListTasks {label}, {last:,} / {first:,} tasks", samples[last], samples[first],
                                  "<=", FLAT_TARGET, unit="us"))
        rows.append([label, *(f"{by_size[s][0]:,.0f} / {by_size[s][1]:,.0f}" for s in sizes),
                     f"{flat[-1]['value']:.2f}x"])
    table(rows)
    print(f"flat (every {last:,}/{first:,} median of per-pass ratios <= {FLAT_TARGET}): "
          f"{verdict(all(row['passed'] for row in flat))}")

    fill_growth = lists["fills"][last]["rss_growth_mib"]
    server_growth = lists["server_rss_mib"][last] - lists["server_rss_mib"][first]
    print(f"\nstore memory: filling a SQLite store with {last:,} tasks grew the process by {fill_growth:.1f} MiB "
          f"({lists['fills'][last]['insert_us']:.0f} us per add_task); target < {RSS_TARGET_MIB:.0f} MiB: "
          f"{verdict(fill_growth < RSS_TARGET_MIB)}")
    print(f"server RSS: {lists['server_rss_mib'][last]:.1f} MiB serving {last:,} tasks, "
          f"{lists['server_rss_mib'][first]:.1f} MiB serving {first:,}: +{server_growth:.1f} MiB; "
          f"target < {RSS_TARGET_MIB:.0f} MiB: {verdict(server_growth < RSS_TARGET_MIB)}")
    unclean = sum(r["exit"] != 0 for runs in trips.values() for r in runs)
    targets = [
        paired_target(f"SendMessage sequential p50, ours / {PYGLS}", rounds(OURS, "p50_us"), rounds(PYGLS, "p50_us"),
                      "<=", P50_TARGET, unit="us"),
        paired_target(f"SendMessage 64 in flight, ours / {PYGLS}", rounds(OURS, "rps"), rounds(PYGLS, "rps"),
                      ">=", THROUGHPUT_TARGET, unit="req/s"),
        paired_target(f"SendMessage 64 in flight, {MEMORY} / {PYGLS}", rounds(MEMORY, "rps"), rounds(PYGLS, "rps"),
                      ">=", MEMORY_THROUGHPUT_TARGET, unit="req/s"),
        target("spawns without a clean exit", unclean, "<=", 0),
        paired_target(f"SendMessage sequential p50, ours (tracing off) / {NO_OTEL}", tracing[OURS],
                      tracing[NO_OTEL], "<=", TRACING_OFF_TARGET, unit="us"),
        *flat,
        target(f"RSS growth filling {last:,} tasks (MiB)", fill_growth, "<", RSS_TARGET_MIB),
        target(f"server RSS growth, {last:,} vs {first:,} tasks (MiB)", server_growth, "<", RSS_TARGET_MIB),
    ]
    figures = [
        paired_info(f"spawn -> 1st SendMessage answer, ours / {PYGLS} spawn -> 1st answer", rounds(OURS, "first_ms"),
                    rounds(PYGLS, "first_ms"), unit="ms"),
        paired_info(f"SendMessage sequential p50, {TRACED} / ours", rounds(TRACED, "p50_us"), rounds(OURS, "p50_us"),
                    unit="us"),
        paired_info(f"SendMessage sequential p50, {MEMORY} / {PYGLS}", rounds(MEMORY, "p50_us"),
                    rounds(PYGLS, "p50_us"), unit="us"),
        paired_info(f"SendMessage sequential p50, {ECHO_MEMORY} / {PYGLS}", rounds(ECHO_MEMORY, "p50_us"),
                    rounds(PYGLS, "p50_us"), unit="us"),
        paired_info(f"SendMessage 64 in flight, {ECHO_MEMORY} / {PYGLS}", rounds(ECHO_MEMORY, "rps"),
                    rounds(PYGLS, "rps"), unit="req/s", better="higher"),
        paired_info(f"SendMessage 64 in flight, ours / {MEMORY}", rounds(OURS, "rps"), rounds(MEMORY, "rps"),
                    unit="req/s", better="higher"),
    ]
    for row in targets[:5]:
        worst = "" if row["worst"] is None else f" (worst round {row['worst']:.2f})"
        print(f"target: {row['name']} {row['op']} {row['limit']:g}: {row['value']:.2f}{worst} {verdict(row['passed'])}")
    ratios = {name: {key: row["value"] for key, row in by_key.items()} for name, by_key in trip_rows.items()}
    return {"round_trips": med, "ratios": ratios, "listing": lists, "targets": targets, "figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts and sizes, for a smoke run")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    parser.add_argument("--fill", nargs=2, metavar=("WORKSPACE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        print(json.dumps(asyncio.run(fill_worker(Path(args.fill[0]), int(args.fill[1])))))
        return 0
    cfg = dict(QUICK if args.quick else FULL)
    print(f"bench_tasks: python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {cfg}; "
          f"bytecode compiled in {compile_our_bytecode()}", file=sys.stderr)
    trips = asyncio.run(round_trips(cfg))
    tracing = asyncio.run(tracing_pairs(cfg))
    lists = asyncio.run(listing(cfg))
    summary = report(trips, lists, tracing)
    if args.json:
        args.json.write_text(json.dumps({"settings": cfg, "spawns": trips, "tracing_p50s": tracing, **summary},
                                        indent=1, default=str))
    return 0  # a report, not a gate


if __name__ == "__main__":
    sys.exit(main())
