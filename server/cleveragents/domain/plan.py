"""Plans: the lifecycle state machine, automation profiles and decisions.

A plan is created from an action, executed into an overlay, reviewed, applied to
the workspace and possibly rolled back. Its position is a (phase, state) pair; the
table below says which actions each position allows, so an illegal call gets an
error that names the current position and what is allowed instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from cleveragents.domain.errors import BusinessRuleViolation
from cleveragents.domain.plan_files import OverlayRecord


class Phase(str, Enum):
    PLAN = "plan"
    EXECUTE = "execute"
    APPLY = "apply"
    ROLLBACK = "rollback"


class State(str, Enum):
    READY = "ready"
    INPUT_REQUIRED = "input-required"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


class Profile(str, Enum):
    MANUAL = "manual"          # approve before execute and before apply
    SUPERVISED = "supervised"  # approve before apply
    AUTONOMOUS = "autonomous"  # no gates

    @property
    def gate_before_execute(self) -> bool:
        return self is Profile.MANUAL

    @property
    def gate_before_apply(self) -> bool:
        return self is not Profile.AUTONOMOUS


# Actions that change a plan; reading (status, tree, explain, diff, artifacts) is
# always allowed.
EXECUTE, APPLY, CANCEL, ROLLBACK, CORRECT, PROMPT = "execute", "apply", "cancel", "rollback", "correct", "prompt"

_P, _S = Phase, State
ALLOWED: dict[tuple[Phase, State], frozenset[str]] = {
    (_P.PLAN, _S.READY): frozenset({EXECUTE, CANCEL, PROMPT}),
    (_P.PLAN, _S.INPUT_REQUIRED): frozenset({EXECUTE, CANCEL, PROMPT}),
    (_P.EXECUTE, _S.RUNNING): frozenset({CANCEL, PROMPT}),
    (_P.EXECUTE, _S.INPUT_REQUIRED): frozenset({APPLY, CORRECT, CANCEL, PROMPT}),
    (_P.EXECUTE, _S.COMPLETED): frozenset({APPLY, CORRECT, CANCEL, PROMPT}),
    (_P.EXECUTE, _S.FAILED): frozenset({EXECUTE, CORRECT, CANCEL, PROMPT}),
    (_P.EXECUTE, _S.INTERRUPTED): frozenset({EXECUTE, CORRECT, CANCEL, PROMPT}),
    (_P.APPLY, _S.RUNNING): frozenset(),
    (_P.APPLY, _S.COMPLETED): frozenset({ROLLBACK}),
    (_P.APPLY, _S.FAILED): frozenset({APPLY, CANCEL}),
    (_P.ROLLBACK, _S.RUNNING): frozenset(),
    (_P.ROLLBACK, _S.COMPLETED): frozenset(),
    (_P.ROLLBACK, _S.FAILED): frozenset({ROLLBACK}),
}
# Positions not listed (every cancelled one included) allow nothing more.


def allowed_actions(phase: Phase, state: State) -> frozenset[str]:
    return ALLOWED.get((phase, state), frozenset())


@dataclass(frozen=True, slots=True)
class Step:
    """One rendered step of the plan's action: the tool and its arguments."""

    id: str
    tool: str
    arguments: dict[str, Any]
    rationale: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "arguments": self.arguments, "rationale": self.rationale}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Step:
        return cls(d["id"], d["tool"], dict(d["arguments"]), d.get("rationale", ""))


@dataclass(frozen=True, slots=True)
class Plan:
    plan_id: str
    action_name: str
    arguments: dict[str, Any]
    profile: Profile
    steps: tuple[Step, ...]
    created_at: str
    updated_at: str
    phase: Phase = Phase.PLAN
    state: State = State.READY
    session_id: str | None = None
    reason: str | None = None
    guidance: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def context_id(self) -> str:
        """The A2A context of the plan's task: a `message/send` here answers its gate."""
        return self.plan_id

    @property
    def allowed(self) -> frozenset[str]:
        return allowed_actions(self.phase, self.state)

    def require(self, action: str) -> None:
        if action not in self.allowed:
            raise BusinessRuleViolation(
                f"Invalid state: can't {action} a plan that is {self.phase.value}/{self.state.value}",
                {"plan_id": self.plan_id, "action": action, "phase": self.phase.value,
                 "state": self.state.value, "allowed_actions": sorted(self.allowed)},
            )

    def moved(self, phase: Phase, state: State, now: str, reason: str | None = None) -> Plan:
        return replace(self, phase=phase, state=state, updated_at=now, reason=reason)

    def with_guidance(self, text: str) -> Plan:
        return replace(self, guidance=(*self.guidance, text))

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"plan_id": self.plan_id, "phase": self.phase.value, "state": self.state.value,
                               "allowed_actions": sorted(self.allowed)}
        if self.reason:
            out["reason"] = self.reason
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.status(), "action_name": self.action_name, "arguments": self.arguments,
            "automation_profile": self.profile.value, "session_id": self.session_id,
            "context_id": self.context_id, "steps": [s.to_dict() for s in self.steps],
            "guidance": list(self.guidance), "created_at": self.created_at, "updated_at": self.updated_at,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        return cls(
            d["plan_id"], d["action_name"], dict(d["arguments"]), Profile(d["automation_profile"]),
            tuple(Step.from_dict(s) for s in d["steps"]), d["created_at"], d["updated_at"],
            Phase(d["phase"]), State(d["state"]), d.get("session_id"), d.get("reason"),
            tuple(d.get("guidance") or ()), dict(d.get("metadata") or {}),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """One executed step: what was called, why, what happened, and how long it took."""

    decision_id: str
    plan_id: str
    step_id: str
    tool: str
    arguments: dict[str, Any]
    parent_id: str | None = None
    rationale: str = ""
    outcome: str = "pending"  # succeeded | failed | cancelled | superseded
    summary: str = ""
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    output: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    guidance: tuple[str, ...] = ()
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: float | None = None
    # The overlay as it was before this step, so a correction can re-run from here.
    overlay_before: tuple[OverlayRecord, ...] = ()
    # "step": a step of the plan; "tool_call": a tool an actor called inside the step
    # (``actor.edit``), a child of the step's decision.
    kind: str = "step"

    def to_dict(self) -> dict[str, Any]:
        """The decision as it is stored (``a2a/extension_codec.py`` has its wire form)."""
        return {
            "decision_id": self.decision_id, "parent_id": self.parent_id, "step_id": self.step_id,
            "tool": self.tool, "rationale": self.rationale, "outcome": self.outcome, "summary": self.summary,
            "reads": list(self.reads), "writes": list(self.writes), "duration_ms": self.duration_ms,
            "kind": self.kind, "plan_id": self.plan_id, "arguments": self.arguments, "output": self.output,
            "error": self.error, "guidance": list(self.guidance), "started_at": self.started_at,
            "ended_at": self.ended_at, "overlay_before": [record.to_dict() for record in self.overlay_before],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Decision:
        return cls(
            d["decision_id"], d["plan_id"], d["step_id"], d["tool"], dict(d["arguments"]),
            d.get("parent_id"), d.get("rationale", ""), d.get("outcome", "pending"), d.get("summary", ""),
            tuple(d.get("reads") or ()), tuple(d.get("writes") or ()), dict(d.get("output") or {}),
            d.get("error"), tuple(d.get("guidance") or ()), d.get("started_at"), d.get("ended_at"),
            d.get("duration_ms"), tuple(OverlayRecord.from_dict(r) for r in d.get("overlay_before") or ()), d.get("kind", "step"),
        )
