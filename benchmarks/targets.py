"""One target of a benchmark, as the bench scripts write it into their ``--json`` output
and as ``run_all.py`` reads it back. Each script decides its own targets; this module
only gives them one shape and one way to compare a figure with its limit. A figure
reported for information (``info``, under ``figures`` in the output) has the same
shape with no limit, and is never judged."""

from __future__ import annotations

import operator
from typing import Any

OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt}


def passes(value: float | None, op: str, limit: float) -> bool:
    return value is not None and OPS[op](value, limit)


def target(name: str, value: float | None, op: str, limit: float, *, ours: float | None = None,
           baseline: float | None = None, unit: str = "") -> dict[str, Any]:
    """``value`` is the figure compared with ``limit``: a ratio when there is a baseline
    (then ``ours`` and ``baseline`` are the two medians, in ``unit``), else the figure itself."""
    return {"name": name, "value": value, "op": op, "limit": limit, "ours": ours, "baseline": baseline,
            "unit": unit, "passed": passes(value, op, limit)}


def info(name: str, value: float | None, *, ours: float | None = None, baseline: float | None = None,
         unit: str = "") -> dict[str, Any]:
    """A figure shown next to the targets, with no limit: ``op``, ``limit`` and ``passed`` are None."""
    return {"name": name, "value": value, "op": None, "limit": None, "ours": ours, "baseline": baseline,
            "unit": unit, "passed": None}
