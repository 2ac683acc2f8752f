"""When an apply or a rollback refuses a file: its content or its permission bits on
disk are no longer the ones the operation expects (what the plan started from, or
what the apply left). A refusal names the paths (``conflicts``) and, for each, what
changed (``conflict_details``); ``force`` overrides it."""

from __future__ import annotations

from typing import Any

from cleveragents.domain.errors import PlanError


def file_conflict(path: str, blob: str | None, mode: int | None, found_blob: str | None,
                  found_mode: int | None) -> dict[str, Any] | None:
    """What differs between the state a file should be in (``blob``, ``mode``; ``None``:
    no file, or no mode known) and the one found: ``None`` when nothing does."""
    changed = []
    if found_blob != blob:
        changed.append("content")
    if mode is not None and found_mode is not None and found_mode != mode:
        changed.append("mode")
    if not changed:
        return None
    conflict: dict[str, Any] = {"path": path, "changed": changed}
    if mode is not None and found_mode is not None and "mode" in changed:
        conflict.update(expected_mode=f"{mode:04o}", found_mode=f"{found_mode:04o}")  # as ls and chmod write them
    return conflict


def conflicts_error(message: str, plan_id: str, conflicts: list[dict[str, Any]]) -> PlanError:
    """``conflicts`` names the paths; ``conflict_details`` says, for each, what changed."""
    return PlanError(message, {"plan_id": plan_id, "conflicts": [conflict["path"] for conflict in conflicts],
                               "conflict_details": conflicts})
