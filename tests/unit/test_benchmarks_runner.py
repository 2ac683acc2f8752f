"""benchmarks/run_all.py is wired to every benchmark script, and its summary judges the
median figure, not any single run. Nothing here measures anything."""

import subprocess
import sys

import pytest

from tests.conftest import REPO

BENCHMARKS = REPO / "benchmarks"
RUN_ALL = [sys.executable, str(BENCHMARKS / "run_all.py")]


@pytest.fixture
def run_all(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import run_all

    return run_all


def test_dry_run_lists_every_bench_script_with_json_output():
    done = subprocess.run([*RUN_ALL, "--quick", "--dry-run"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    scripts = sorted(path.name for path in BENCHMARKS.glob("bench_*.py"))
    assert len(lines) == len(scripts) == 8
    for script in scripts:  # a new bench script must be added to the runner
        (line,) = [line for line in lines if f"benchmarks/{script} " in line]
        assert " ok " in line and "--json" in line, line
    assert "--quick" in done.stdout


def test_only_selects_and_rejects_unknown_names():
    done = subprocess.run([*RUN_ALL, "--dry-run", "--only", "http,plans"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["plans", "http"]
    assert "--quick" not in done.stdout
    done = subprocess.run([*RUN_ALL, "--dry-run", "--only", "stdio,nope"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "unknown benchmark(s): nope" in done.stderr


def test_summary_judges_the_median_over_repetitions(run_all):
    from targets import target

    def run(rep: int, ratio: float) -> dict:
        return {"bench": "stdio", "repetition": rep,
                "targets": [target("p50 ratio", ratio, "<=", 1.0, ours=ratio * 100, baseline=100.0, unit="us"),
                            target("heartbeat (ms)", 10.0 * (rep + 1), "<=", 50.0)]}

    failed = {"bench": "http", "repetition": 0, "error": "exit code 1"}
    rows = run_all.summarize([run(0, 0.9), run(1, 1.2), failed, run(2, 1.1)])
    ratio, beat, error = rows
    assert ratio == {"bench": "stdio", "name": "p50 ratio", "ours": pytest.approx(110.0), "baseline": 100.0,
                     "unit": "us", "value": 1.1, "worst": 1.2, "op": "<=", "limit": 1.0, "samples": 3,
                     "passed": False}
    assert (beat["value"], beat["worst"], beat["ours"], beat["baseline"], beat["passed"]) == (20.0, 30.0, None, None, True)
    assert error == {"bench": "http", "name": "(benchmark failed)", "error": "exit code 1"}


def test_a_missing_figure_fails_its_target(run_all):
    from targets import target

    assert target("startup ratio", None, "<=", 1.0)["passed"] is False
    (row,) = run_all.summarize([{"bench": "tasks", "targets": [target("rss (MiB)", None, "<", 40.0)]}])
    assert row["value"] is None and row["passed"] is False


def test_information_figures_follow_the_targets_and_are_never_judged(run_all):
    from targets import info, target

    def run(rep: int, rps: float) -> dict:
        return {"bench": "stdio", "repetition": rep, "targets": [target("p50 ratio", 0.5, "<=", 1.0)],
                "figures": [info("pipelined, ours / echo", rps / 50_000, ours=rps, baseline=50_000.0, unit="req/s",
                                 better="higher")]}

    judged, figure = run_all.summarize([run(0, 10_000.0), run(1, 12_000.0), run(2, 30_000.0)])
    assert judged["name"] == "p50 ratio" and judged["passed"] is True
    assert figure == {"bench": "stdio", "name": "pipelined, ours / echo", "ours": 12_000.0, "baseline": 50_000.0,
                      "unit": "req/s", "value": pytest.approx(0.24), "worst": pytest.approx(0.2), "op": None,
                      "limit": None, "samples": 3, "passed": None}


def test_worst_is_the_worst_repetition_in_the_direction_of_the_limit(run_all):
    from targets import paired_target, target

    runs = [{"bench": "tasks", "targets": [target("in flight", v, ">=", 5.0, worst=w)]} for v, w in ((6.0, 4.0), (7.0, 5.5))]
    (row,) = run_all.summarize(runs)
    assert (row["value"], row["worst"], row["passed"]) == (6.5, 4.0, True)
    # paired: a ratio per repetition, then their median; the baseline's drift cancels out
    paired = paired_target("apply / copy", [200.0, 400.0, 90.0], [100.0, 200.0, 30.0], "<=", 3.0, unit="ms")
    assert (paired["value"], paired["worst"], paired["ours"], paired["baseline"]) == (2.0, 3.0, 200.0, 100.0)
