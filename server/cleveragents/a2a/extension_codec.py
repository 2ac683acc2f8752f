"""The wire form of the extension methods' results (plans and sessions).

The services answer with domain objects (``domain/plan_results.py``,
``domain/session.py``); this module is the one place that says what a client gets
for each, as the codecs do for tasks. The shapes are those ``docs/protocol.md``
documents; the contract tests hold them.
"""

from __future__ import annotations

from typing import Any

from cleveragents.domain.plan import Decision, Plan
from cleveragents.domain.plan_results import (
    ArtifactShown,
    DecisionExplained,
    PlanArtifacts,
    PlanDiff,
    PlanMoved,
    PlanPage,
    PlanTree,
    PlanWritten,
)
from cleveragents.domain.session import Session, SessionCreated, SessionPage


# -- plans ------------------------------------------------------------------------
def plan_status(plan: Plan) -> dict[str, Any]:
    return plan.status()


def plan_created(plan: Plan) -> dict[str, Any]:
    return {**plan.status(), "action_name": plan.action_name, "automation_profile": plan.profile.value,
            "context_id": plan.context_id, "steps": [step.to_dict() for step in plan.steps]}


def plan_moved(moved: PlanMoved) -> dict[str, Any]:
    out = moved.plan.status()
    if moved.cancelling:
        out["cancelling"] = True
    if moved.running:
        out["running"] = True
    return out


def plan_written(written: PlanWritten) -> dict[str, Any]:
    return {**written.plan.status(), "files": list(written.files), "written_by": written.written_by}


def plan_prompted(plan: Plan) -> dict[str, Any]:
    return {"plan_id": plan.plan_id, "queued": len(plan.guidance), **plan.status()}


def plan_summary(plan: Plan) -> dict[str, Any]:
    return {**plan.status(), "action_name": plan.action_name, "automation_profile": plan.profile.value,
            "session_id": plan.session_id, "created_at": plan.created_at, "updated_at": plan.updated_at}


def plan_page(page: PlanPage) -> dict[str, Any]:
    return {"plans": [plan_summary(plan) for plan in page.plans], "next_cursor": page.next_cursor,
            "total": page.total}


def decision_brief(d: Decision) -> dict[str, Any]:
    """A decision in a tree: what it read and wrote is only counted."""
    return {"decision_id": d.decision_id, "parent_id": d.parent_id, "step_id": d.step_id, "tool": d.tool,
            "rationale": d.rationale, "outcome": d.outcome, "summary": d.summary, "reads": len(d.reads),
            "writes": len(d.writes), "duration_ms": d.duration_ms, "kind": d.kind}


def decision_full(d: Decision) -> dict[str, Any]:
    """A decision in full, for people: the overlay snapshot is only counted."""
    return {**decision_brief(d), "plan_id": d.plan_id, "arguments": d.arguments, "reads": list(d.reads),
            "writes": list(d.writes), "output": d.output, "error": d.error, "guidance": list(d.guidance),
            "started_at": d.started_at, "ended_at": d.ended_at, "overlay_before": len(d.overlay_before)}


def plan_tree(tree: PlanTree) -> dict[str, Any]:
    """The decisions as a forest by their parent links, and as a flat list."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    nodes: list[tuple[Decision, dict[str, Any]]] = []
    for decision in tree.decisions:
        node = {**decision_brief(decision), "children": []}
        nodes.append((decision, node))
        children.setdefault(decision.parent_id, []).append(node)
    for decision, node in nodes:
        node["children"] = children.get(decision.decision_id, [])
    return {**tree.plan.status(), "roots": children.get(None, []),
            "decisions": [decision_brief(decision) for decision in tree.decisions]}


def decision_explained(explained: DecisionExplained) -> dict[str, Any]:
    return {**decision_full(explained.decision), "step_index": explained.step_index,
            "steps": len(explained.plan.steps), "plan": explained.plan.status()}


def plan_diff(diff: PlanDiff) -> dict[str, Any]:
    return {"plan_id": diff.plan.plan_id, **diff.plan.status(), **diff.diff}


def _artifact(shown: ArtifactShown) -> dict[str, Any]:
    a = shown.artifact
    out: dict[str, Any] = {"artifact_id": a.artifact_id, "decision_id": a.decision_id, "name": a.name,
                           "media_type": a.media_type, "size": a.size, "created_at": a.created_at}
    if shown.text is not None:
        out["text"] = shown.text
    return out


def plan_artifacts(artifacts: PlanArtifacts) -> dict[str, Any]:
    return {"plan_id": artifacts.plan_id, "artifacts": [_artifact(shown) for shown in artifacts.artifacts]}


# -- sessions ---------------------------------------------------------------------
def session(found: Session) -> dict[str, Any]:
    return found.to_dict()


def session_created(created: SessionCreated) -> dict[str, Any]:
    s = created.session
    return {"session_id": s.session_id, "status": created.status, "actor_name": s.actor_name,
            "created_at": s.created_at}


def session_closed(closed: Session) -> dict[str, Any]:
    return {"session_id": closed.session_id, "status": "closed", "closed_at": closed.closed_at}


def session_page(page: SessionPage) -> dict[str, Any]:
    return {"sessions": [s.to_dict() for s in page.sessions], "next_cursor": page.next_cursor,
            "total": page.total}
