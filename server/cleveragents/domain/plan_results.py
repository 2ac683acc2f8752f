"""What the plan service answers: the plan, and what the call did to it.

These are the service's results, not their wire form: ``a2a/extension_codec.py``
encodes them, as the codecs encode tasks.
"""

from __future__ import annotations

from typing import Any

from cleveragents.domain.plan import Decision, Plan
from cleveragents.domain.plan_files import PlanArtifact
from cleveragents.domain.records import record


@record
class PlanMoved:
    """A plan after a lifecycle call: still ``running`` (an execute that did not wait),
    ``cancelling`` (a cancel that stops a running execution), or where the call left it."""

    plan: Plan
    running: bool = False
    cancelling: bool = False


@record
class PlanWritten:
    """An apply or a rollback: the files it changed and who wrote them ("server" | "editor")."""

    plan: Plan
    files: tuple[str, ...]
    written_by: str


@record
class PlanPage:
    plans: tuple[Plan, ...]
    next_cursor: str | None
    total: int


@record
class PlanTree:
    """The plan's decisions, in the order they were made; the tree is their parent links."""

    plan: Plan
    decisions: tuple[Decision, ...]


@record
class DecisionExplained:
    """One decision, with the position of its step in the plan (``None``: no such step)."""

    plan: Plan
    decision: Decision
    step_index: int | None


@record
class PlanDiff:
    """The plan's overlay against the workspace (after an apply, against the checkpoint),
    as the workspace computes it: ``diff`` and per-file ``files``."""

    plan: Plan
    diff: dict[str, Any]


@record
class ArtifactShown:
    """An artifact as a caller gets it: with its text when it is short text, else ``None``."""

    artifact: PlanArtifact
    text: str | None = None


@record
class PlanArtifacts:
    plan_id: str
    artifacts: tuple[ArtifactShown, ...]
