"""Replicas benchmark: SendMessage throughput and p50 with one, two and four
`agents serve --http` replicas on one PostgreSQL server, next to one process on SQLite.

Run by hand:  .venv/bin/python benchmarks/postgres_replicas.py [--quick]

PostgreSQL is started as the tests start it (tests/postgres_server.py: Debian's
server in a temporary directory, on a free loopback port), with its tests' settings
(no fsync): the figures compare the servers' own cost, not a disk. Each replica is a
real `agents serve --http` process with its own empty workspace; the client keeps
``CONCURRENCY`` SendMessage requests in flight (JSON-RPC 1.0, plain "hello", the local
actor), spread round-robin over the replicas, as a balancing proxy would. Figures:
requests per second, and the median time of one request.

On a machine with fewer cores than replicas (plus the database and the client), more
replicas can't go faster: the table says how many cores this run had. This is a report,
not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
AGENTS = Path(sys.executable).with_name("agents")
TOKEN = "bench-replicas-token"
HEADERS = {"A2A-Version": "1.0", "Authorization": f"Bearer {TOKEN}"}
CONCURRENCY = 16
FULL = {"requests": 2000, "warmup": 100}
QUICK = {"requests": 300, "warmup": 30}


def start_replica(workspace: Path, store: str | None) -> tuple[subprocess.Popen[str], str]:
    args = [str(AGENTS), "serve", "--http", "--host", "127.0.0.1", "--port", "0", "--auth-token", TOKEN,
            "--workspace", str(workspace)]
    if store:
        args += ["--store", store]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    while not (line := process.stderr.readline()).startswith("listening on "):
        if not line:
            raise RuntimeError("a replica stopped before listening")
    return process, line.split()[-1] + "/a2a"


async def load(urls: list[str], requests: int, warmup: int) -> tuple[float, float]:
    """(requests per second, p50 in ms) with CONCURRENCY in flight over ``urls``."""
    targets = itertools.cycle(urls)
    counter = itertools.count()
    times: list[float] = []

    async def one(client: httpx.AsyncClient, n: int) -> None:
        body = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": {
            "role": "ROLE_USER", "messageId": f"m-{n}-{time.monotonic_ns()}", "parts": [{"text": "hello"}]}}}
        started = time.perf_counter()
        response = await client.post(next(targets), json=body, headers=HEADERS)
        answer = response.json()
        if "result" not in answer:
            raise RuntimeError(f"SendMessage failed: {answer}")
        times.append(time.perf_counter() - started)

    async def worker(client: httpx.AsyncClient, budget: int) -> None:
        while (n := next(counter)) < budget:
            await one(client, n)

    limits = httpx.Limits(max_connections=CONCURRENCY * 2, max_keepalive_connections=CONCURRENCY * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(*(worker(client, warmup) for _ in range(CONCURRENCY)))
        times.clear()
        counter = itertools.count()
        started = time.perf_counter()
        await asyncio.gather(*(worker(client, requests) for _ in range(CONCURRENCY)))
        elapsed = time.perf_counter() - started
    return requests / elapsed, statistics.median(times) * 1000


def measure(label: str, replicas: int, store: str | None, sizes: dict[str, int]) -> tuple[str, float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as root:
        started = []
        try:
            for n in range(replicas):
                workspace = Path(root) / f"ws{n}"
                workspace.mkdir()
                started.append(start_replica(workspace, store))
            rate, p50 = asyncio.run(load([url for _, url in started], sizes["requests"], sizes["warmup"]))
        finally:
            for process, _ in started:
                process.terminate()
                process.wait(timeout=15)
    return label, rate, p50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests, for a smoke run")
    sizes = QUICK if parser.parse_args().quick else FULL
    from tests.postgres_server import running_server, stop_postgres

    server = running_server()
    if isinstance(server, str):
        print(f"PostgreSQL is not available: {server}", file=sys.stderr)
        return 0
    try:
        rows = [measure("SQLite, 1 process", 1, None, sizes)]
        for replicas in (1, 2, 4):
            rows.append(measure(f"PostgreSQL, {replicas} replica{'s' if replicas > 1 else ''}", replicas,
                                server.new_database(), sizes))
    finally:
        stop_postgres()
    base = rows[0][1]
    print(f"SendMessage, {CONCURRENCY} in flight, {sizes['requests']} requests; {os.cpu_count()} cores")
    print(f"{'':24} {'req/s':>8} {'p50 ms':>8} {'vs SQLite':>10}")
    for label, rate, p50 in rows:
        print(f"{label:24} {rate:8.0f} {p50:8.1f} {rate / base:9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
