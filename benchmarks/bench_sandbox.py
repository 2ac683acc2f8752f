"""Sandbox benchmark: what confinement adds to a ``shell.run`` command, through real servers.

Run by hand:  .venv/bin/python benchmarks/bench_sandbox.py [--quick] [--reps N] [--json FILE]

Two ``cleveragents-lsp`` servers run side by side on copies of one git repository: the
default configuration (the README's start: SQLite store, commands sandboxed), and the
same with ``[shell] sandbox = "off"`` in the user's configuration, the baseline. Each
repetition runs a one-step ``run`` plan of each command on both, in alternating order,
and reads the step's duration from its decision (the tool's whole run, measured in
the server). The figure is the paired difference: confined minus unconfined, per
repetition. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_plans import Conn
from bench_stdio import HEALTH, INIT_PARAMS
from targets import target

PLAN = "_cleveragents/plan/"
SERVER = [sys.executable, "-m", "cleveragents.transports.lsp"]
COMMANDS = ("true", "cat README.md", "git status --short")
FILES = 300
FULL, QUICK = 30, 8
TARGET_ADDED_MS = 20.0


def make_repository(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "README.md").write_text("hello\n")
    for i in range(FILES):
        path = root / f"pkg{i % 10}" / f"module_{i:03d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"VALUE = {i}\n" * 20)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=b@example.invalid", "-c", "user.name=b",
                                                 "commit", "-qm", "first"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)


async def start(workspace: Path, config_home: Path, errlog: Any) -> tuple[asyncio.subprocess.Process, Conn]:
    proc = await asyncio.create_subprocess_exec(
        *SERVER, "--workspace", str(workspace), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=errlog, env={**os.environ, "XDG_CONFIG_HOME": str(config_home)}, limit=1 << 24,
    )
    conn = Conn(proc)
    await conn.call("initialize", INIT_PARAMS)
    conn.send("initialized", {}, notify=True)
    await conn.call(HEALTH, {})
    return proc, conn


async def step_ms(conn: Conn, command: str) -> float:
    """Run ``command`` as a one-step plan; the step's duration (ms), as the server measured it."""
    plan = await conn.call(PLAN + "use", {"action_name": "run", "automation_profile": "autonomous",
                                          "arguments": {"command": command}})
    await conn.call(PLAN + "execute", {"plan_id": plan["plan_id"]})
    tree = await conn.call(PLAN + "tree", {"plan_id": plan["plan_id"]})
    (decision,) = tree["decisions"]
    if decision["outcome"] != "succeeded":
        raise RuntimeError(f"{command!r}: the step {decision['outcome']}: {decision['summary']}")
    return float(decision["duration_ms"])


async def run(reps: int) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {c: {"confined": [], "unconfined": []} for c in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as scratch:
        root = Path(scratch)
        configs = {"confined": root / "config-default", "unconfined": root / "config-off"}
        for name, home in configs.items():
            (home / "cleveragents").mkdir(parents=True)
            sandbox = "on" if name == "confined" else "off"
            allow = json.dumps(list(COMMANDS))
            (home / "cleveragents" / "config.toml").write_text(f'[shell]\nsandbox = "{sandbox}"\nallow = {allow}\n')
        servers: dict[str, tuple[asyncio.subprocess.Process, Conn]] = {}
        with tempfile.TemporaryFile() as errlog:
            try:
                for name, home in configs.items():
                    make_repository(root / name)
                    servers[name] = await start(root / name, home, errlog)
                for command in COMMANDS:  # warm: the first sandboxed command probes the machine
                    for _, conn in servers.values():
                        await step_ms(conn, command)
                for rep in range(reps):
                    order = ("confined", "unconfined") if rep % 2 == 0 else ("unconfined", "confined")
                    for command in COMMANDS:
                        for name in order:
                            samples[command][name].append(await step_ms(servers[name][1], command))
                    print(f"  rep {rep + 1}/{reps}", file=sys.stderr)
            except Exception:
                errlog.seek(0)
                print(errlog.read().decode(errors="replace")[-2000:], file=sys.stderr)
                raise
            finally:
                for proc, conn in servers.values():
                    conn.reader.cancel()
                    proc.kill()
                    await proc.wait()
    return samples


def report(samples: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    rows = [("command", "confined p50", "unconfined p50", "added p50", "added worst", "ratio p50")]
    targets, figures = [], []
    for command, pair in samples.items():
        added = [a - b for a, b in zip(pair["confined"], pair["unconfined"], strict=True)]
        confined, unconfined = statistics.median(pair["confined"]), statistics.median(pair["unconfined"])
        ratios = [a / b for a, b in zip(pair["confined"], pair["unconfined"], strict=True) if b > 0]
        rows.append((command, f"{confined:.1f} ms", f"{unconfined:.1f} ms", f"{statistics.median(added):.1f} ms",
                     f"{max(added):.1f} ms", f"{statistics.median(ratios):.2f}"))
        targets.append(target(f"sandbox adds to `{command}` (ms, p50 of paired differences)",
                              statistics.median(added), "<=", TARGET_ADDED_MS, ours=confined, baseline=unconfined,
                              unit="ms", worst=max(added)))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))
    for item in targets:
        print(f"target: {item['name']} <= {TARGET_ADDED_MS:.0f}: {'PASS' if item['passed'] else 'FAIL'} "
              f"({item['value']:.1f})")
    return {"targets": targets, "figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for a smoke run")
    parser.add_argument("--reps", type=int, help="paired repetitions per command")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    args = parser.parse_args()
    reps = args.reps or (QUICK if args.quick else FULL)
    env = f"python {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs"
    print(f"bench_sandbox: {env}; {reps} paired repetitions", file=sys.stderr)
    samples = asyncio.run(run(reps))
    print(f"\n{env}; {FILES} files in a git repository, {reps} paired repetitions\n")
    summary = report(samples)
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "reps": reps, "samples": samples, **summary}, indent=1))
    return 0  # a report, not a gate


if __name__ == "__main__":
    sys.exit(main())
