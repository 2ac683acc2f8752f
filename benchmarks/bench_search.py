"""Search benchmark: fs.search (RE2, one search per file) against the same walk matching
Python's re line by line, the engine fs.search had before, on ordinary patterns.

Run by hand:  .venv/bin/python benchmarks/bench_search.py [--quick] [--rounds N] [--json FILE]

A generated tree of Python-like files is searched through the real tool and the plan
overlay (a Container in memory mode). The baseline walks the same view, reads the same
files and matches each line with ``re.finditer``, as fs.search did, back to back with
ours in every round. Each time is the median of the rounds; the ratio is taken per
round, its median is judged and its worst round shown beside it. The target is that
the linear-time engine costs no more than the backtracking one on patterns that never
backtrack.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from targets import info, paired, target

FULL = {"rounds": 7, "files": 2000}
QUICK = {"rounds": 3, "files": 400}
FILE_LINES = 400
TARGET_RATIO = 1.0
CASES = [
    {"pattern": "import os", "max_results": 10_000},
    {"pattern": r"def \w+\(self, \w+", "max_results": 10_000},
    {"pattern": "todo", "ignore_case": True, "max_results": 10_000},
    {"pattern": "never_found_anywhere"},
    {"pattern": r"Zq|qZ|never_here$"},
]
WORDS = ["alpha", "beta", "gamma", "delta", "value", "result", "config", "handler", "item", "index"]


def make_tree(root: Path, files: int) -> int:
    rng = random.Random(7)
    total = 0
    for n in range(files):
        lines = []
        for i in range(FILE_LINES):
            a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
            kind = i % 10
            lines.append("import os\n" if kind == 0 and i % 40 == 0 else
                         f"    def {a}_{i}(self, {b}):\n" if kind == 1 else
                         f"        # TODO: {c} {a}\n" if kind == 2 and i % 30 == 2 else
                         f"        {a}_{b} = {c}({a}, {b}) + {i}\n")
        path = root / f"pkg{n % 40}" / f"module_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(lines).encode()
        path.write_bytes(data)
        total += len(data)
    return total


def baseline_search(view: Any, arguments: dict[str, Any]) -> int:
    """fs.search before RE2: Python's re over each line of each text file."""
    from cleveragents.infra.workspace.text import decode_text, split_lines

    regex = re.compile(arguments["pattern"], re.IGNORECASE if arguments.get("ignore_case") else 0)
    limit, found = arguments.get("max_results", 100), 0
    for path in view.glob("**/*"):
        text = decode_text(view.read_bytes(path))
        if text is None:
            continue
        for line in split_lines(text):
            for _ in regex.finditer(line.rstrip("\r\n")):
                found += 1
                if found == limit:
                    return found
    return found


def measure(rounds: int, files: int) -> dict[str, Any]:
    from cleveragents.config import Settings
    from cleveragents.container import Container
    from cleveragents.domain.tools import ToolContext

    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        root = Path(tmp)
        size = make_tree(root, files)
        container = Container(Settings(workspace=root, memory=True))
        tool = container.tool_registry.get("fs.search")
        results = []
        try:
            for case in CASES:
                ours, theirs, counts = [], [], set()
                for _ in range(rounds):
                    view = container.plan_workspace.overlay()
                    started = time.perf_counter()
                    output = tool.run(dict(case), ToolContext(view=view, workspace=tmp)).output
                    ours.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    found = baseline_search(container.plan_workspace.overlay(), case)
                    theirs.append(time.perf_counter() - started)
                    counts.add((len(output["results"]), found))
                (matched, expected), = counts
                assert matched == expected, f"{case}: {matched} matches, the baseline found {expected}"
                results.append({"case": case, "ours_ms": statistics.median(ours) * 1000,
                                "baseline_ms": statistics.median(theirs) * 1000, "matches": matched,
                                **{f"{key}_ratio": value for key, value in paired(ours, theirs, "lower").items()
                                   if key in ("value", "worst")}})
            line = container.plan_workspace.overlay()
            (root / "long.py").write_text("a" * 60 + "\n")
            started = time.perf_counter()
            tool.run({"pattern": "(.|.)*QQQ", "glob": "long.py"}, ToolContext(view=line, workspace=tmp))
            pathological_ms = (time.perf_counter() - started) * 1000
        finally:
            container.close()
    return {"files": files, "bytes": size, "cases": results, "pathological_ms": pathological_ms}


def report(measured: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The table on stdout; the targets, and the figures given for information."""
    print(f"fs.search over {measured['files']:,} files ({measured['bytes'] / 2**20:.1f} MiB), median of the rounds;\n"
          "ratio: RE2 over re in the same round, the median of the rounds and the worst")
    rows = [("pattern", "matches", "RE2 (ms)", "re per line (ms)", "ratio", "worst round")]
    targets = []
    for result in measured["cases"]:
        case, ours, theirs = result["case"], result["ours_ms"], result["baseline_ms"]
        label = case["pattern"] + (" (ignore case)" if case.get("ignore_case") else "")
        ratio, worst = result["value_ratio"], result["worst_ratio"]
        rows.append((label, str(result["matches"]), f"{ours:.0f}", f"{theirs:.0f}", f"{ratio:.2f}", f"{worst:.2f}"))
        targets.append(target(f"fs.search {label}", ratio, "<=", TARGET_RATIO, ours=ours,
                              baseline=theirs, unit="ms", worst=worst))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if index == 0:
            print("-+-".join("-" * w for w in widths))
    print(f"(.|.)*QQQ on a 60-character line: {measured['pathological_ms']:.1f} ms "
          "(Python's re: more than 36 s, not run)")
    return targets, [info("fs.search (.|.)*QQQ on a 60-character line", measured["pathological_ms"], unit="ms")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK['files']} files, {QUICK['rounds']} rounds")
    parser.add_argument("--rounds", type=int, help="rounds per pattern")
    parser.add_argument("--files", type=int, help="files in the tree")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    opts = parser.parse_args()
    settings = dict(QUICK if opts.quick else FULL)
    settings.update({k: v for k, v in (("rounds", opts.rounds), ("files", opts.files)) if v is not None})
    print(f"... searching {settings['files']:,} files, {settings['rounds']} rounds", file=sys.stderr, flush=True)
    measured = measure(settings["rounds"], settings["files"])
    targets, figures = report(measured)
    if opts.json:
        opts.json.write_text(json.dumps({"settings": settings, "results": measured, "targets": targets,
                                         "figures": figures}, indent=1))
    return 0  # a report, not a test


if __name__ == "__main__":
    sys.exit(main())
