"""Stdio benchmark: cleveragents-lsp as the README starts it (the SQLite store under the
workspace's .cleveragents/, the default local actor) against a bare, stock pygls 2.x
server, and against a bare asyncio echo server (the floor: what the stdio transport
itself costs in Python). The same server with --memory is measured for information.

Run by hand:  .venv/bin/python benchmarks/bench_stdio.py [--quick] [--json FILE]

All servers are driven by the same client code below (plain asyncio pipes and a
small Content-Length framer), so any difference comes from the servers themselves.
Every spawn gets its own empty workspace. Ratios are paired: each round spawns every
server once, a ratio is taken per round, and the figure is their median with the
worst round beside it. See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from baselines.bare_asyncio_echo import read_frame
from targets import paired_info, paired_target, target

HERE = Path(__file__).resolve().parent
HEALTH = "_cleveragents/health/check"
INIT_PARAMS = {"processId": None, "rootUri": None, "capabilities": {}}
SERVERS = {
    "cleveragents": [sys.executable, "-m", "cleveragents.transports.lsp"],
    "bare pygls": [sys.executable, str(HERE / "baselines" / "bare_pygls_server.py")],
    "asyncio echo": [sys.executable, str(HERE / "baselines" / "bare_asyncio_echo.py")],
    "ours --memory": [sys.executable, "-m", "cleveragents.transports.lsp", "--memory"],
    # Tracing: ours (off) against the same server unable to import opentelemetry, and on.
    "ours, no otel": [sys.executable, str(HERE / "baselines" / "without_opentelemetry.py")],
    "ours, tracing on": [sys.executable, "-m", "cleveragents.transports.lsp"],
}
OURS, PYGLS, ECHO, MEMORY, NO_OTEL, TRACED = SERVERS
TRACING_OFF = {"CLEVERAGENTS_TRACING": "0"}
# On, with no exporter: what making the spans costs, not what sending them does.
TRACING_ON = {"CLEVERAGENTS_TRACING": "1", "OTEL_TRACES_EXPORTER": "none"}
ENVIRONMENTS = {OURS: TRACING_OFF, NO_OTEL: TRACING_OFF, MEMORY: TRACING_OFF, TRACED: TRACING_ON}
BASELINES = (PYGLS, ECHO)
FIRST_ANSWER_TARGET = 0.5  # spawn -> first A2A answer, ours / stock pygls spawn -> initialize
HEALTH_P50_TARGET = 1.5  # health check p50, ours / asyncio echo
TRACING_OFF_TARGET = 1.1  # ours (tracing off) / ours unable to import opentelemetry: no move beyond noise
FULL = {"rounds": 7, "load_runs": 3, "early": 300, "requests": 2000, "warmup": 100, "pipelined": 5000, "depth": 64}
QUICK = {"rounds": 3, "load_runs": 1, "early": 50, "requests": 200, "warmup": 20, "pipelined": 1000, "depth": 64}
# Between the first answers and the timed round trips: a server may still be loading after
# its first answer (ours: its services, then the pygls server), and the p50 judges a
# server at work, not its start. Start-up has rows of its own, and the first answers'
# round trips are reported for information ("early").
SETTLE_SECONDS = 1.5


class Conn:
    """One spawned server and the client end of its stdio pipes."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.next_id = 0
        self.last_body_size = 0

    def send(self, method: str, params: Any = None, *, notify: bool = False) -> int | None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        msg_id = None
        if not notify:
            self.next_id = msg_id = self.next_id + 1
            msg["id"] = msg_id
        self._write(msg)
        return msg_id

    def _write(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg, separators=(",", ":")).encode()
        # One write per frame: the pipe sees whole messages, as an editor would send them.
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def drain(self) -> None:
        await self.proc.stdin.drain()

    async def read_frame(self) -> dict[str, Any]:
        body = await read_frame(self.proc.stdout)  # the echo baseline's framer: one framer for both ends
        if body is None:
            raise EOFError("server closed stdout")
        self.last_body_size = len(body)
        return json.loads(body)

    async def response(self) -> dict[str, Any]:
        """The next response; notifications are skipped, server requests answered."""
        while True:
            msg = await self.read_frame()
            if "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"error response: {msg['error']}")
                return msg
            if "id" in msg:  # e.g. client/registerCapability: answer so the server isn't stuck
                self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        msg_id = self.send(method, params)
        await self.drain()
        msg = await self.response()
        if msg.get("id") != msg_id:
            raise RuntimeError(f"expected a response to {msg_id}, got {msg.get('id')}")
        return msg


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure was really observed)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


async def timed_calls(conn: Conn, method: str, params: Any, n: int) -> list[float]:
    """The latencies (us) of ``n`` calls made one at a time."""
    latencies = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        await conn.call(method, params)
        latencies.append((time.perf_counter_ns() - t0) / 1000)
    return latencies


async def in_flight(conn: Conn, method: str, params: Any, total: int, depth: int) -> float:
    """Requests per second with ``depth`` in flight: a new one goes out as each answer arrives."""
    t0 = time.perf_counter()
    sent = done = 0
    while sent < min(depth, total):
        conn.send(method, params)
        sent += 1
    await conn.drain()
    while done < total:
        await conn.response()
        done += 1
        if sent < total:
            conn.send(method, params)
            sent += 1
            await conn.drain()
    return total / (time.perf_counter() - t0)


async def session(cmd: list[str], cfg: dict[str, int], load: bool, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Spawn one server in an empty workspace of its own (so every SQLite store starts
    empty), time `initialize` and the first A2A answer, optionally load it, then shut it down."""
    result: dict[str, Any] = {}
    with tempfile.TemporaryFile() as errlog, tempfile.TemporaryDirectory(prefix="bench-stdio-") as workdir:
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=errlog,
            cwd=workdir,
            env={**os.environ, **(env or {})},
            limit=1 << 24,  # ours sends a few KiB of capabilities; keep readexactly happy at any size
        )
        conn = Conn(proc)
        try:
            await conn.call("initialize", INIT_PARAMS)
            result["startup_ms"] = (time.perf_counter() - t0) * 1000
            conn.send("initialized", {}, notify=True)
            # The first A2A request waits for whatever a server defers past `initialize`
            # (ours: its services and the store); an editor can do nothing useful before it.
            t1 = time.perf_counter()
            await conn.call(HEALTH, {})
            result["first_request_ms"] = (time.perf_counter() - t1) * 1000
            result["ready_ms"] = (time.perf_counter() - t0) * 1000  # spawn to the first A2A answer
            result["health_body_bytes"] = conn.last_body_size
            if load:
                early = await timed_calls(conn, HEALTH, {}, cfg["early"])
                result["early_p50_us"], result["early_p99_us"] = percentile(early, 50), percentile(early, 99)
                await asyncio.sleep(SETTLE_SECONDS)
                await timed_calls(conn, HEALTH, {}, cfg["warmup"])  # not counted: one-off costs (caches, allocator)
                latencies = await timed_calls(conn, HEALTH, {}, cfg["requests"])
                result["rtt_p50_us"] = percentile(latencies, 50)
                result["rtt_p99_us"] = percentile(latencies, 99)
                result["rps"] = await in_flight(conn, HEALTH, {}, cfg["pipelined"], cfg["depth"])
                result["latencies_us"] = latencies
            await conn.call("shutdown")
            conn.send("exit", notify=True)
            await conn.drain()
            proc.stdin.close()
            result["exit_code"] = await asyncio.wait_for(proc.wait(), 15)
        except Exception as exc:  # noqa: BLE001 - any failure is reported, the other runs go on
            errlog.seek(0)
            tail = errlog.read().decode(errors="replace")[-1500:]
            result["error"] = f"{type(exc).__name__}: {exc}\n{tail}"
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    return result


async def run(cfg: dict[str, int], timeout: float) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in SERVERS}
    # One untimed spawn each, so the first timed spawn doesn't pay for a cold page cache.
    for name, cmd in SERVERS.items():
        primed = await asyncio.wait_for(session(cmd, cfg, False, ENVIRONMENTS.get(name)), timeout)
        if "error" in primed:
            print(f"!! {name}, priming spawn: {primed['error']}", file=sys.stderr)
    for i in range(cfg["rounds"]):
        # Alternate the order (ABCD, DCBA, ...) so no server always runs first or last.
        order = list(SERVERS) if i % 2 == 0 else list(reversed(SERVERS))
        for name in order:
            load = i < cfg["load_runs"]
            try:
                res = await asyncio.wait_for(session(SERVERS[name], cfg, load, ENVIRONMENTS.get(name)), timeout)
            except TimeoutError:
                res = {"error": f"session timed out after {timeout}s"}
            if "error" in res:
                print(f"!! {name}, round {i + 1}: {res['error']}", file=sys.stderr)
            runs[name].append(res)
            print(
                f"  round {i + 1}/{cfg['rounds']} {name:<13} "
                + ", ".join(f"{k}={v:.1f}" for k, v in res.items() if isinstance(v, float))
                + f", exit={res.get('exit_code', '?')}",
                file=sys.stderr,
            )
    return runs


def summarize(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    def med(key: str, fn=statistics.median) -> float | None:
        values = [r[key] for r in runs if key in r]
        return fn(values) if values else None

    return {
        "startup median (ms)": med("startup_ms"),
        "startup min (ms)": med("startup_ms", min),
        "first request (ms)": med("first_request_ms"),
        "spawn->1st A2A answer (ms)": med("ready_ms"),
        "round trip p50 (us)": med("rtt_p50_us"),
        "round trip p99 (us)": med("rtt_p99_us"),
        "pipelined (req/s)": med("rps"),
        "health reply (bytes)": med("health_body_bytes"),
    }


def fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}" if v >= 100 or v == int(v) else f"{v:,.1f}"


def report(runs: dict[str, list[dict[str, Any]]], depth: int, early: int) -> dict[str, Any]:
    summary = {name: summarize(runs[name]) for name in SERVERS}
    ours = summary[OURS]
    ratios: dict[str, dict[str, float | None]] = {base: {} for base in BASELINES}
    for base in BASELINES:
        for metric, a in ours.items():
            b = summary[base][metric]
            ratios[base][metric] = a / b if a is not None and b else None
    rows = [("metric", *SERVERS, *(f"{OURS} vs {base}" for base in BASELINES))]
    for metric in ours:
        rows.append((metric, *(fmt(summary[name][metric]) for name in SERVERS),
                     *("n/a" if ratios[base][metric] is None else f"{ratios[base][metric]:.2f}" for base in BASELINES)))
    codes = [
        f"all 0 ({len(runs[name])})"
        if all(r.get("exit_code") == 0 for r in runs[name])
        else ",".join(str(r.get("exit_code", "?")) for r in runs[name])
        for name in SERVERS
    ]
    rows.append(("exit codes", *codes, *("" for _ in BASELINES)))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))

    def per_round(name: str, key: str) -> list[float | None]:
        return [r.get(key) for r in runs[name]]

    unclean = sum(r.get("exit_code") != 0 for rs in runs.values() for r in rs)
    targets = [
        paired_target(f"spawn -> 1st A2A answer, ours / {PYGLS} spawn -> initialize", per_round(OURS, "ready_ms"),
                      per_round(PYGLS, "startup_ms"), "<=", FIRST_ANSWER_TARGET, unit="ms"),
        paired_target(f"health check p50, ours / {ECHO}", per_round(OURS, "rtt_p50_us"),
                      per_round(ECHO, "rtt_p50_us"), "<=", HEALTH_P50_TARGET, unit="us"),
        paired_target(f"spawn -> 1st A2A answer, ours (tracing off) / {NO_OTEL}", per_round(OURS, "ready_ms"),
                      per_round(NO_OTEL, "ready_ms"), "<=", TRACING_OFF_TARGET, unit="ms"),
        target("spawns without a clean exit", unclean, "<=", 0),
    ]
    figures = [
        paired_info(f"{TRACED}: spawn -> 1st A2A answer / ours", per_round(TRACED, "ready_ms"),
                    per_round(OURS, "ready_ms"), unit="ms"),
        paired_info(f"{TRACED}: health check p50 / ours", per_round(TRACED, "rtt_p50_us"),
                    per_round(OURS, "rtt_p50_us"), unit="us"),
        paired_info(f"spawn -> initialize, ours / {PYGLS}", per_round(OURS, "startup_ms"), per_round(PYGLS, "startup_ms"),
                    unit="ms"),
        paired_info(f"health check p50, ours / {PYGLS}", per_round(OURS, "rtt_p50_us"), per_round(PYGLS, "rtt_p50_us"),
                    unit="us"),
        paired_info(f"pipelined at depth {depth}, ours / {PYGLS}", per_round(OURS, "rps"), per_round(PYGLS, "rps"),
                    unit="req/s", better="higher"),
        paired_info(f"pipelined at depth {depth}, ours / {ECHO}", per_round(OURS, "rps"), per_round(ECHO, "rps"),
                    unit="req/s", better="higher"),
        paired_info(f"{MEMORY}: spawn -> 1st A2A answer / {PYGLS} spawn -> initialize", per_round(MEMORY, "ready_ms"),
                    per_round(PYGLS, "startup_ms"), unit="ms"),
        paired_info(f"{MEMORY}: health check p50 / {ECHO}", per_round(MEMORY, "rtt_p50_us"),
                    per_round(ECHO, "rtt_p50_us"), unit="us"),
        paired_info(f"health check p50, the first {early} after the first answer, ours / {ECHO}",
                    per_round(OURS, "early_p50_us"), per_round(ECHO, "early_p50_us"), unit="us"),
        paired_info(f"health check p99, the first {early} after the first answer, ours / {ECHO}",
                    per_round(OURS, "early_p99_us"), per_round(ECHO, "early_p99_us"), unit="us"),
    ]
    print(f"\n{OURS} vs X = {OURS} / X: below 1.0 is better, except pipelined req/s (higher is better)."
          f"\n{OURS} runs as the README starts it (SQLite store, local actor); {MEMORY} is information."
          "\nTargets: paired per round, median of the rounds' ratios (worst round in brackets)")
    for row in targets:
        worst = "" if row["worst"] is None else f" (worst {row['worst']:.2f})"
        value = "n/a" if row["value"] is None else f"{row['value']:.2f}"
        print(f"  {row['name']} {row['op']} {row['limit']:g}: {value}{worst} "
              f"{'PASS' if row['passed'] else 'FAIL'}")
    return {"summary": summary, "ratios": ratios, "targets": targets, "figures": figures}


def compile_our_bytecode() -> str:
    """Write our package's bytecode, as ``pip install`` does for an installed package
    (the Dockerfile's too). A checkout installed in editable mode gets none where
    PYTHONDONTWRITEBYTECODE is set, and then every spawn of ours would compile each
    module it imports from source, while stock pygls runs from the bytecode pip wrote
    for it. Returns the package's directory."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("cleveragents")
    assert spec is not None and spec.origin is not None, "cleveragents is not installed"
    package = Path(spec.origin).parent
    compileall.compile_dir(package, quiet=1)
    return str(package)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    parser.add_argument("--rounds", type=int, help="spawns per server (startup samples)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per session")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    if args.rounds:
        cfg["rounds"] = args.rounds
    env = f"python {platform.python_version()}, pygls {version('pygls')}, {platform.platform()}, {os.cpu_count()} CPUs"
    print(f"bench_stdio: {env}\nsettings: {cfg}\nbytecode compiled in {compile_our_bytecode()}\n", file=sys.stderr)
    runs = asyncio.run(run(cfg, args.timeout))
    print(
        f"\n{env}; {cfg['rounds']} spawns/server, {cfg['load_runs']} loaded; "
        f"{cfg['requests']} sequential, {cfg['pipelined']} pipelined at depth {cfg['depth']}\n"
    )
    summary = report(runs, cfg["depth"], cfg["early"])
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "settings": cfg, "runs": runs, **summary}, indent=1))
    return 0  # a report, not a gate


if __name__ == "__main__":
    sys.exit(main())
