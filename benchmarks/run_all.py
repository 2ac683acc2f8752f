"""Every benchmark in one command, each next to its baseline in the same run, and one
table of the targets at the end.

Run by hand:  .venv/bin/python benchmarks/run_all.py [--quick] [--repeat N] [--only stdio,http]
              [--json FILE] [--dry-run]       (a full run takes 3 to 6 minutes on 2 CPUs)

Each benchmark script runs as a child process with ``--json``; its own tables and
progress go to stderr as it runs, and the summary table goes to stdout. Each script
takes its own repetitions (spawns or rounds) and reports medians; ``--repeat N`` runs
every script N times and the summary shows the median of the N figures, judged again
against the target, with the worst repetition of any run beside it. The scripts decide
their targets (see ``targets.py``); this runner only collects them, and the figures a
script reports for information, which the table shows after that script's targets with
``info`` for a result. It is a report: it exits
0 even when a target fails, and 1 only when a benchmark script itself failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from targets import passes, worst_of

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    baseline: str
    quick: tuple[str, ...] = ("--quick",)
    full: tuple[str, ...] = ()

    def command(self, quick: bool, json_path: Path) -> list[str]:
        return [sys.executable, str(HERE / self.script), *(self.quick if quick else self.full), "--json", str(json_path)]


BENCHES = (
    Bench("stdio", "bench_stdio.py", "stock pygls server (baselines/bare_pygls_server.py), spawn to initialize; "
          "a bare asyncio echo server (baselines/bare_asyncio_echo.py), health check p50"),
    Bench("tasks", "bench_tasks.py", "stock pygls server's health check; ListTasks at 1,000 tasks"),
    Bench("plans", "bench_plans.py", "shutil.copyfile loop over the same files"),
    Bench("task_store", "bench_task_store.py", "the same store at 1,000 tasks",
          quick=("--sizes", "1000,10000", "--reps", "51")),
    Bench("http", "bench_http.py", "plain a2a-sdk server (DefaultRequestHandler)"),
    Bench("sandbox", "bench_sandbox.py", "the same server with [shell] sandbox = \"off\", paired per repetition"),
    Bench("search", "bench_search.py", "the same walk matching Python's re line by line"),
    Bench("send_context", "bench_send_context.py", "SendMessage into a context of 1,000 tasks"),
)


def environment() -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "commit": commit.strip() or None,
            "packages": {name: version(name) for name in ("pygls", "a2a-sdk", "uvicorn", "pydantic")}}


def run_one(bench: Bench, quick: bool, workdir: Path, repetition: int) -> dict[str, Any]:
    """Run one script once; its targets, or the reason there are none."""
    json_path = workdir / f"{bench.name}-{repetition}.json"
    command = bench.command(quick, json_path)
    load = os.getloadavg()[0]
    print(f"\n=== {bench.name} (run {repetition + 1}, load {load:.2f}): {' '.join(command[1:])}", file=sys.stderr, flush=True)
    began = time.monotonic()
    # the script's tables and progress go to our stderr, so stdout carries only the summary
    done = subprocess.run(command, cwd=REPO, stdout=sys.stderr, stderr=sys.stderr)
    out: dict[str, Any] = {"bench": bench.name, "repetition": repetition, "load_before": load,
                           "seconds": time.monotonic() - began, "exit_code": done.returncode}
    if done.returncode != 0 or not json_path.exists():
        out["error"] = f"exit code {done.returncode}" + ("" if json_path.exists() else ", no --json output")
        return out
    raw = json.loads(json_path.read_text())
    out["targets"], out["figures"], out["raw"] = raw.get("targets") or [], raw.get("figures") or [], raw
    if not out["targets"]:
        out["error"] = "no targets in its --json output"
    return out


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (benchmark, target): the median over repetitions of each figure, judged
    again against the limit, and the worst repetition of any run; then one per information
    figure, not judged (``passed`` None); a benchmark that failed gets one error row."""
    rows: list[dict[str, Any]] = []
    for bench in dict.fromkeys(run["bench"] for run in runs):
        mine = [run for run in runs if run["bench"] == bench]
        failed = [run["error"] for run in mine if "error" in run]
        if failed:
            rows.append({"bench": bench, "name": "(benchmark failed)", "error": "; ".join(failed)})
        by_name: dict[str, list[dict[str, Any]]] = {}
        for run in mine:
            for t in run.get("targets", []) + run.get("figures", []):
                by_name.setdefault(t["name"], []).append(t)
        for name, samples in by_name.items():
            def median(key: str, samples: list[dict[str, Any]] = samples) -> float | None:
                values = [s[key] for s in samples if s[key] is not None]
                return statistics.median(values) if values else None

            first = samples[0]
            value = median("value")
            better = first.get("better") or ("higher" if first["op"] == ">=" else "lower")
            # a script without a worst figure counts its median as its worst
            worst = worst_of([s["value"] if s.get("worst") is None else s["worst"] for s in samples], better)
            rows.append({"bench": bench, "name": name, "ours": median("ours"), "baseline": median("baseline"),
                         "unit": first["unit"], "value": value, "worst": worst, "op": first["op"],
                         "limit": first["limit"], "samples": len(samples),
                         "passed": None if first["op"] is None else passes(value, first["op"], first["limit"])})
    return rows


def fmt(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.2f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    table = [["benchmark", "target", "ours", "baseline", "figure", "worst", "limit", "result"]]
    for row in rows:
        if "error" in row:
            table.append([row["bench"], row["error"], "", "", "", "", "", "ERROR"])
            continue
        unit = f" {row['unit']}" if row["unit"] else ""
        table.append([row["bench"], row["name"], fmt(row["ours"]) + unit if row["ours"] is not None else "",
                      fmt(row["baseline"]) + unit if row["baseline"] is not None else "", fmt(row["value"]),
                      fmt(row["worst"]),
                      "" if row["op"] is None else f"{row['op']} {row['limit']:g}",
                      "info" if row["passed"] is None else "PASS" if row["passed"] else "FAIL"])
    widths = [max(len(line[c]) for line in table) for c in range(len(table[0]))]
    for n, line in enumerate(table):
        print(" | ".join(cell.ljust(w) if c < 2 else cell.rjust(w) for c, (cell, w) in enumerate(zip(line, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))


def dry_run(benches: list[Bench], quick: bool) -> int:
    """Check the wiring without measuring: every script is there, compiles and takes --json."""
    broken = 0
    for bench in benches:
        path = HERE / bench.script
        try:
            source = path.read_text()
            compile(source, str(path), "exec")
            problem = "" if '"--json"' in source else "no --json option"
        except (OSError, SyntaxError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        broken += bool(problem)
        command = " ".join(bench.command(quick, Path(f"{bench.name}.json"))[1:]).replace(f"{REPO}{os.sep}", "")
        print(f"{bench.name:<12} {'BROKEN: ' + problem if problem else 'ok'}  {command}  (baseline: {bench.baseline})")
    return 1 if broken else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each script's smoke settings (a few minutes in all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of every script; the summary takes the median")
    parser.add_argument("--only", help="comma-separated benchmarks: " + ",".join(b.name for b in BENCHES))
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the summary and every script's numbers")
    parser.add_argument("--dry-run", action="store_true", help="list what would run and check the scripts; measure nothing")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else [b.name for b in BENCHES]
    unknown = set(names) - {b.name for b in BENCHES}
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    benches = [b for b in BENCHES if b.name in names]
    if args.dry_run:
        return dry_run(benches, args.quick)

    env = environment()
    load = os.getloadavg()[0]
    if load > 2:
        print(f"warning: load average {load:.2f} > 2; the figures will be noisy", file=sys.stderr)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-run-all-") as tmp:
        runs = [run_one(bench, args.quick, Path(tmp), rep) for rep in range(args.repeat) for bench in benches]
    rows = summarize(runs)
    minutes = (time.monotonic() - began) / 60
    loads = [run["load_before"] for run in runs]
    print(f"\nPython {env['python']}, {env['cpus']} CPUs, commit {env['commit']}; "
          f"{'quick' if args.quick else 'full'} run, {args.repeat} repetition(s), {minutes:.1f} min; "
          f"load average before each benchmark {min(loads):.2f} to {max(loads):.2f}")
    print("figure = the value judged against the limit: ours / baseline when there is a baseline, else the figure itself;"
          " medians over the repetitions;\n"
          "worst = the same figure in the worst repetition (spawn or round) of any run;\n"
          "result info = a figure reported for information, with no limit\n")
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "quick": args.quick, "repeat": args.repeat,
                                         "minutes": minutes, "summary": rows, "runs": runs}, indent=1, default=str))
    return 1 if any("error" in run for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
