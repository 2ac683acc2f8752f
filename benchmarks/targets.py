"""One target of a benchmark, as the bench scripts write it into their ``--json`` output
and as ``run_all.py`` reads it back. Each script decides its own targets; this module
only gives them one shape and one way to compare a figure with its limit. A figure
reported for information (``info``, under ``figures`` in the output) has the same
shape with no limit, and is never judged.

Every row carries ``worst``: the figure of its worst repetition (spawn or round), shown
beside the median, and ``better``, the direction that is better ("lower" or "higher"),
so a runner can pick the worst of several runs."""

from __future__ import annotations

import operator
import statistics
from collections.abc import Sequence
from typing import Any

OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt}


def passes(value: float | None, op: str, limit: float) -> bool:
    return value is not None and OPS[op](value, limit)


def worst_of(values: Sequence[float | None], better: str) -> float | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return max(present) if better == "lower" else min(present)


def target(name: str, value: float | None, op: str, limit: float, *, ours: float | None = None,
           baseline: float | None = None, unit: str = "", worst: float | None = None) -> dict[str, Any]:
    """``value`` is the figure compared with ``limit``: a ratio when there is a baseline
    (then ``ours`` and ``baseline`` are the two medians, in ``unit``), else the figure itself."""
    return {"name": name, "value": value, "op": op, "limit": limit, "ours": ours, "baseline": baseline,
            "unit": unit, "worst": worst, "better": "higher" if op == ">=" else "lower",
            "passed": passes(value, op, limit)}


def info(name: str, value: float | None, *, ours: float | None = None, baseline: float | None = None,
         unit: str = "", worst: float | None = None, better: str = "lower") -> dict[str, Any]:
    """A figure shown next to the targets, with no limit: ``op``, ``limit`` and ``passed`` are None."""
    return {"name": name, "value": value, "op": None, "limit": None, "ours": ours, "baseline": baseline,
            "unit": unit, "worst": worst, "better": better, "passed": None}


def paired(ours: Sequence[float | None], baseline: Sequence[float | None], better: str) -> dict[str, Any]:
    """Ours over the baseline of the same repetition, for each repetition: a baseline that
    drifts during the run (a shared disk, the machine's load) then moves both sides of
    one ratio alike. ``value`` is the median of those ratios, ``worst`` the worst one;
    ``ours`` and ``baseline`` are each side's median, for the table."""
    pairs = [(o, b) for o, b in zip(ours, baseline, strict=True) if o is not None and b]
    ratios = [o / b for o, b in pairs]
    return {"value": statistics.median(ratios) if ratios else None, "worst": worst_of(ratios, better),
            "ours": statistics.median(o for o, _ in pairs) if pairs else None,
            "baseline": statistics.median(b for _, b in pairs) if pairs else None}


def paired_target(name: str, ours: Sequence[float | None], baseline: Sequence[float | None], op: str,
                  limit: float, unit: str = "") -> dict[str, Any]:
    return target(name, op=op, limit=limit, unit=unit, **paired(ours, baseline, "higher" if op == ">=" else "lower"))


def paired_info(name: str, ours: Sequence[float | None], baseline: Sequence[float | None], unit: str = "",
                better: str = "lower") -> dict[str, Any]:
    return info(name, unit=unit, better=better, **paired(ours, baseline, better))
