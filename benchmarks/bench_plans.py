"""Plan benchmark: execute, diff, apply and rollback of a replace over 1,000 files of
10 KiB, through a real cleveragents-lsp on stdio, next to a plain copy loop.

Run by hand:  .venv/bin/python benchmarks/bench_plans.py [--quick] [--rounds N] [--json FILE]

Each round gets a fresh workspace, state directory and server process, and times the
copy loop (the baseline) on the same disk: a step's ratio to it is taken per round,
and the figure is the median of those ratios, with the worst round beside it. While
execute, apply and rollback run, the client sends a health check every 10 ms and
keeps the slowest answer: that is how long an editor would wait on the server.
See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import asyncio
import filecmp
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_stdio import HEALTH, INIT_PARAMS
from bench_stdio import Conn as FrameConn
from targets import paired, target

PLAN = "_cleveragents/plan/"
SERVER = [sys.executable, "-m", "cleveragents.transports.lsp"]
LINE_BYTES, LINES = 64, 160  # 10 KiB per file
FOO_LINES = (0, LINES // 2)  # two hunks per file in the diff
HEARTBEAT_SECONDS = 0.010
FULL = {"rounds": 5, "files": 1000}
QUICK = {"rounds": 2, "files": 300}
TIMED = ("execute", "diff", "apply", "rollback")
WATCHED = ("execute", "apply", "rollback")  # the ones run under the heartbeat
TARGET_RATIO = 3.0
TARGET_HEARTBEAT_MS = 50.0


class Conn(FrameConn):
    """One spawned server; a reader task hands each response to the call awaiting it,
    so heartbeats and a long call can be in flight together."""

    def __init__(self, proc: asyncio.subprocess.Process):
        super().__init__(proc)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.ensure_future(self._read())

    def send(self, method: str, params: Any = None, *, notify: bool = False) -> int | None:
        msg_id = super().send(method, params, notify=notify)
        if msg_id is not None:  # before any await: the reader can't have seen the answer yet
            self.waiting[msg_id] = asyncio.get_running_loop().create_future()
        return msg_id

    async def _read(self) -> None:
        try:
            while True:
                msg = await self.read_frame()
                if "method" in msg:
                    if "id" in msg:  # a request from the server: answer so it isn't stuck
                        self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                    continue
                future = self.waiting.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(msg)
        except Exception as exc:  # noqa: BLE001 - every waiting call learns why
            for future in self.waiting.values():
                if not future.done():
                    future.set_exception(exc)

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        msg_id = self.send(method, params)
        assert msg_id is not None
        future = self.waiting[msg_id]
        await self.proc.stdin.drain()
        msg = await future
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]


def make_workspace(root: Path, files: int) -> list[str]:
    paths = []
    for i in range(files):
        path = f"pkg{i % 20:02d}/module_{i:04d}.txt"
        lines = []
        for j in range(LINES):
            text = f"{i:04d}:{j:03d} {'foo' if j in FOO_LINES else 'keep'} "
            lines.append(text + "x" * (LINE_BYTES - 1 - len(text)) + "\n")
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(lines))
        paths.append(path)
    return paths


def copy_loop(source: Path, target: Path, paths: list[str]) -> float:
    """The baseline: the same files copied one by one, directories made as needed."""
    started = time.perf_counter()
    for path in paths:
        destination = target / path
        try:
            shutil.copyfile(source / path, destination)
        except FileNotFoundError:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / path, destination)
    return time.perf_counter() - started


async def heartbeat(conn: Conn, done: asyncio.Event) -> list[float]:
    """A health check every 10 ms until ``done``, answered or not; their latencies (s)."""
    latencies: list[float] = []
    beats: list[asyncio.Future[None]] = []

    async def beat() -> None:
        sent = time.perf_counter()
        await conn.call(HEALTH, {})
        latencies.append(time.perf_counter() - sent)

    next_at = time.perf_counter()
    while not done.is_set():
        beats.append(asyncio.ensure_future(beat()))
        next_at += HEARTBEAT_SECONDS
        await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    await asyncio.gather(*beats)
    return latencies


async def timed(conn: Conn, method: str, params: dict[str, Any], watch: bool) -> tuple[float, list[float]]:
    done = asyncio.Event()
    beats = asyncio.ensure_future(heartbeat(conn, done)) if watch else None
    started = time.perf_counter()
    await conn.call(PLAN + method, params)
    elapsed = time.perf_counter() - started
    done.set()
    return elapsed, (await beats if beats is not None else [])


async def one_round(files: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-plans-") as scratch:
        root = Path(scratch)
        workspace, state, copies = root / "workspace", root / "state", root / "copy"
        paths = make_workspace(workspace, files)
        result: dict[str, Any] = {"copy_s": copy_loop(workspace, copies, paths)}
        with tempfile.TemporaryFile() as errlog:  # a file, not a pipe: stderr can never block the server
            proc = await asyncio.create_subprocess_exec(
                *SERVER, "--workspace", str(workspace), "--state-dir", str(state),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=errlog, limit=1 << 26,
            )
            conn = Conn(proc)
            try:
                await asyncio.wait_for(run_plan(conn, result, workspace, copies, paths), timeout)
                await conn.call("shutdown")
                conn.send("exit", notify=True)
                proc.stdin.close()
                await asyncio.wait_for(proc.wait(), 15)
            except Exception as exc:  # noqa: BLE001 - reported, the other rounds go on
                errlog.seek(0)
                result["error"] = f"{type(exc).__name__}: {exc}\n{errlog.read().decode(errors='replace')[-1500:]}"
            finally:
                conn.reader.cancel()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    return result


async def run_plan(conn: Conn, result: dict[str, Any], workspace: Path, copies: Path, paths: list[str]) -> None:
    await conn.call("initialize", INIT_PARAMS)
    conn.send("initialized", {}, notify=True)
    # Everything is loaded before anything is timed. A health check alone is answered
    # before the LSP layer has loaded (transports/lsp/early.py); one with a progress
    # token is not, so its answer means the whole server is up.
    await conn.call(HEALTH, {"workDoneToken": "bench-ready"})
    plan = await conn.call(PLAN + "use", {
        "action_name": "replace", "automation_profile": "supervised",
        "arguments": {"pattern": "foo", "replacement": "bar", "glob": "**/*.txt"},
    })
    params = {"plan_id": plan["plan_id"]}
    for op in TIMED:
        seconds, beats = await timed(conn, op, params, op in WATCHED)
        result[f"{op}_s"] = seconds
        if beats:
            result[f"{op}_worst_beat_ms"] = max(beats) * 1000
            result[f"{op}_beats"] = len(beats)
        if op == "apply":  # a benchmark of a no-op would be worthless: check the work
            changed = sum(b"bar" in (workspace / path).read_bytes() for path in paths)
            if changed != len(paths):
                raise RuntimeError(f"apply changed {changed} of {len(paths)} files")
    _, mismatched, errors = filecmp.cmpfiles(workspace, copies, paths, shallow=False)
    if mismatched or errors:
        raise RuntimeError(f"rollback left {len(mismatched) + len(errors)} files different")


def fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def report(rounds: list[dict[str, Any]], files: int) -> dict[str, Any]:
    ok = [r for r in rounds if "error" not in r]
    if not ok:
        print("no round finished")
        return {}

    def med(key: str) -> float | None:
        values = [r[key] for r in ok if key in r]
        return statistics.median(values) if values else None

    copy = med("copy_s")
    assert copy is not None
    summary: dict[str, Any] = {}
    rows = [("step", "median ms", "us/file", "x copy (median)", "x copy (worst)", "worst beat ms (median)",
             "worst beat ms (max)")]
    rows.append(("copy loop", fmt(copy * 1000), fmt(copy * 1e6 / files), "1.00", "", "", ""))
    for op in TIMED:
        seconds = med(f"{op}_s")
        assert seconds is not None
        worst = [r[f"{op}_worst_beat_ms"] for r in ok if f"{op}_worst_beat_ms" in r]
        # the copy loop moves 2-6x between rounds on a shared disk: divide by the same round's
        ratio = paired([r.get(f"{op}_s") for r in ok], [r["copy_s"] for r in ok], "lower")
        summary[op] = {"median_s": seconds, "us_per_file": seconds * 1e6 / files, "ratio_to_copy": ratio["value"],
                       "ratio_to_copy_worst": ratio["worst"],
                       "worst_beat_ms_median": statistics.median(worst) if worst else None,
                       "worst_beat_ms_max": max(worst) if worst else None}
        rows.append((op, fmt(seconds * 1000), fmt(seconds * 1e6 / files), f"{ratio['value']:.2f}",
                     f"{ratio['worst']:.2f}", fmt(summary[op]["worst_beat_ms_median"]),
                     fmt(summary[op]["worst_beat_ms_max"])))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))

    def verdict(passed: bool) -> str:
        return "PASS" if passed else "FAIL"

    worst_ms = max(summary[op]["worst_beat_ms_max"] or 0.0 for op in WATCHED)
    print(f"\nmedians of {len(ok)} round(s) ({len(rounds) - len(ok)} failed); x copy: the step over the same "
          "round's copy loop, median and worst round; heartbeat every "
          f"{HEARTBEAT_SECONDS * 1000:.0f} ms during {', '.join(WATCHED)}")
    print(f"targets: apply <= {TARGET_RATIO:.0f}x copy: {verdict(summary['apply']['ratio_to_copy'] <= TARGET_RATIO)}; "
          f"rollback <= {TARGET_RATIO:.0f}x copy: {verdict(summary['rollback']['ratio_to_copy'] <= TARGET_RATIO)}; "
          f"worst heartbeat <= {TARGET_HEARTBEAT_MS:.0f} ms: {verdict(worst_ms <= TARGET_HEARTBEAT_MS)} "
          f"({worst_ms:.1f} ms)")
    targets = [target(f"{op} / copy loop, paired per round", summary[op]["ratio_to_copy"], "<=", TARGET_RATIO,
                      ours=summary[op]["median_s"] * 1000, baseline=copy * 1000, unit="ms",
                      worst=summary[op]["ratio_to_copy_worst"]) for op in ("apply", "rollback")]
    # judged on the slowest beat of any round, so its worst is itself
    targets.append(target(f"worst heartbeat during {', '.join(WATCHED)} (ms)", worst_ms, "<=", TARGET_HEARTBEAT_MS,
                          worst=worst_ms))
    return {"copy_median_s": copy, "steps": summary, "targets": targets}


async def run(cfg: dict[str, int], timeout: float) -> list[dict[str, Any]]:
    rounds = []
    for i in range(cfg["rounds"]):
        result = await one_round(cfg["files"], timeout)
        rounds.append(result)
        if "error" in result:
            print(f"!! round {i + 1}: {result['error']}", file=sys.stderr)
        print(f"  round {i + 1}/{cfg['rounds']}: " + ", ".join(
            f"{k}={v * 1000 if k.endswith('_s') else v:.1f}" for k, v in result.items() if isinstance(v, float)),
            file=sys.stderr)
    return rounds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer files and rounds, for a smoke run")
    parser.add_argument("--rounds", type=int, help="rounds (a fresh workspace and server each)")
    parser.add_argument("--files", type=int, help="files in the workspace")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per round")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    cfg.update({k: v for k, v in (("rounds", args.rounds), ("files", args.files)) if v})
    env = f"python {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs"
    print(f"bench_plans: {env}\nsettings: {cfg}\n", file=sys.stderr)
    rounds = asyncio.run(run(cfg, args.timeout))
    print(f"\n{env}; {cfg['files']} files of {LINE_BYTES * LINES // 1024} KiB, {cfg['rounds']} round(s)\n")
    summary = report(rounds, cfg["files"])
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "settings": cfg, "rounds": rounds, **summary}, indent=1))
    return 0  # a report, not a gate


if __name__ == "__main__":
    sys.exit(main())
