"""Plans and context pins in the in-memory store, with the same contract as SQLite's.

Values are kept as JSON text, as SQLite keeps them: a caller mutating a dict later
can't change what was stored, and a value SQLite would reject fails here too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Collection
from typing import Any

from cleveragents.domain.plan import Decision, Plan, State
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, PlanArtifact
from cleveragents.infra.store._memory import MemoryRepository
from cleveragents.infra.store.records import RecordReader
from cleveragents.infra.store.sqlite_plans import (
    check_decisions,
    overlay_rows,
    pins_kept,
)


def _session_of(body: str) -> str | None:
    try:
        session_id = json.loads(body).get("session_id")
    except (ValueError, RecursionError, AttributeError):
        return None
    return session_id if isinstance(session_id, str) else None


def _encode_overlay(records: list[OverlayRecord]) -> list[str]:
    return [json.dumps(record.to_dict()) for _, record in overlay_rows(records)]


class MemoryPlans(MemoryRepository):
    """Plans and what hangs off them, with the same contract as ``SqlitePlans``."""

    def __init__(self, check_open: Callable[[], None], records: RecordReader):
        super().__init__(check_open, records)
        self._plan_bodies: dict[str, tuple[int, str]] = {}  # plan_id -> (position, body)
        self._plan_seq = itertools.count(1)
        # Dicts keep insertion order, and assigning an existing key keeps its place.
        self._plan_decisions: dict[str, dict[str, str]] = {}
        self._plan_overlays: dict[str, list[str]] = {}
        self._plan_checkpoints: dict[str, str] = {}
        self._plan_artifacts: dict[str, dict[str, str]] = {}

    def _require_plan(self, plan_id: str) -> None:
        self._check_open()
        if plan_id not in self._plan_bodies:
            raise KeyError(plan_id)

    # -- plans ---------------------------------------------------------------------
    async def add_plan(self, plan: Plan) -> None:
        self._check_open()
        if plan.plan_id in self._plan_bodies:
            raise ValueError(f"plan {plan.plan_id} already exists")
        body = json.dumps(plan.to_dict())
        self._plan_bodies[plan.plan_id] = (next(self._plan_seq), body)

    async def save_plan(self, plan: Plan) -> None:
        self._require_plan(plan.plan_id)
        self._plan_bodies[plan.plan_id] = (self._plan_bodies[plan.plan_id][0], json.dumps(plan.to_dict()))

    async def get_plan(self, plan_id: str) -> Plan | None:
        self._check_open()
        entry = self._plan_bodies.get(plan_id)
        return self.records.load("plans", plan_id, entry[1], Plan.from_dict) if entry else None

    async def list_plans(
        self, *, session_id: str | None = None, limit: int, before: int | None = None
    ) -> list[tuple[int, Plan]]:
        self._check_open()
        found: list[tuple[int, Plan]] = []
        for plan_id, (seq, body) in sorted(self._plan_bodies.items(), key=lambda item: item[1], reverse=True):
            if len(found) == limit:
                break
            if before is not None and seq >= before:
                continue
            plan = self.records.skip("plans", plan_id, body, Plan.from_dict)
            if plan is not None and (session_id is None or plan.session_id == session_id):
                found.append((seq, plan))
        return found

    async def count_plans(self, *, session_id: str | None = None) -> int:
        """Every stored plan, as SQLite counts them: those that can't be served too."""
        self._check_open()
        return sum(1 for _, body in self._plan_bodies.values() if session_id is None or _session_of(body) == session_id)

    async def plans_in_states(self, states: Collection[State]) -> list[Plan]:
        self._check_open()
        wanted = {State(s) for s in states}
        plans = (self.records.skip("plans", plan_id, body, Plan.from_dict)
                 for plan_id, (_, body) in sorted(self._plan_bodies.items(), key=lambda item: item[1]))
        return [plan for plan in plans if plan is not None and plan.state in wanted]

    async def save_plan_state(
        self, plan: Plan, decisions: list[Decision], overlay_records: list[OverlayRecord] | None
    ) -> None:
        check_decisions(plan.plan_id, decisions)
        self._require_plan(plan.plan_id)
        # Encode everything first: a failure must leave every part as it was.
        body = json.dumps(plan.to_dict())
        encoded = [(d.decision_id, json.dumps(d.to_dict())) for d in decisions]
        overlay = _encode_overlay(overlay_records) if overlay_records is not None else None
        self._plan_bodies[plan.plan_id] = (self._plan_bodies[plan.plan_id][0], body)
        self._plan_decisions.setdefault(plan.plan_id, {}).update(encoded)
        if overlay is not None:
            self._plan_overlays[plan.plan_id] = overlay

    # -- decisions -----------------------------------------------------------------
    async def save_decision(self, decision: Decision) -> None:
        self._require_plan(decision.plan_id)
        body = json.dumps(decision.to_dict())
        self._plan_decisions.setdefault(decision.plan_id, {})[decision.decision_id] = body

    async def list_decisions(self, plan_id: str) -> list[Decision]:
        self._check_open()
        bodies = self._plan_decisions.get(plan_id, {}).items()
        decisions = (self.records.skip("plan_decisions", f"{plan_id}/{decision_id}", body, Decision.from_dict)
                     for decision_id, body in bodies)
        return [decision for decision in decisions if decision is not None]

    async def get_decision(self, plan_id: str, decision_id: str) -> Decision | None:
        self._check_open()
        body = self._plan_decisions.get(plan_id, {}).get(decision_id)
        if body is None:
            return None
        return self.records.load("plan_decisions", f"{plan_id}/{decision_id}", body, Decision.from_dict)

    # -- overlay and checkpoint ----------------------------------------------------
    async def replace_overlay(self, plan_id: str, records: list[OverlayRecord]) -> None:
        encoded = _encode_overlay(records)
        self._require_plan(plan_id)
        self._plan_overlays[plan_id] = encoded

    async def load_overlay(self, plan_id: str) -> list[OverlayRecord]:
        self._check_open()
        return [self.records.load("plan_overlay", f"{plan_id}/{position}", record, OverlayRecord.from_dict)
                for position, record in enumerate(self._plan_overlays.get(plan_id, []))]

    async def put_checkpoint(self, plan_id: str, checkpoint: Checkpoint) -> None:
        self._require_plan(plan_id)
        self._plan_checkpoints[plan_id] = json.dumps(checkpoint.to_dict())

    async def get_checkpoint(self, plan_id: str) -> Checkpoint | None:
        self._check_open()
        body = self._plan_checkpoints.get(plan_id)
        return self.records.load("plan_checkpoints", plan_id, body, Checkpoint.from_dict) if body is not None else None

    # -- artifacts index -----------------------------------------------------------
    async def add_plan_artifact(self, plan_id: str, artifact: PlanArtifact) -> None:
        artifact_id, body = artifact.artifact_id, json.dumps(artifact.to_dict())
        self._require_plan(plan_id)
        artifacts = self._plan_artifacts.setdefault(plan_id, {})
        if artifact_id in artifacts:
            raise ValueError(f"artifact {artifact_id} of plan {plan_id} already exists")
        artifacts[artifact_id] = body

    async def list_plan_artifacts(self, plan_id: str) -> list[PlanArtifact]:
        self._check_open()
        records = (self.records.skip("plan_artifacts", f"{plan_id}/{artifact_id}", record, PlanArtifact.from_dict)
                   for artifact_id, record in self._plan_artifacts.get(plan_id, {}).items())
        return [record for record in records if record is not None]



class MemoryPins(MemoryRepository):
    """Context pins, with the same contract as ``SqlitePins``."""

    def __init__(self, check_open: Callable[[], None], records: RecordReader):
        super().__init__(check_open, records)
        self._context_pins: dict[str, dict[str, str]] = {}

    async def set_pin(self, scope: str, key: str, value: Any) -> None:
        self._check_open()
        self._context_pins.setdefault(scope, {})[key] = json.dumps(value)

    async def delete_pin(self, scope: str, key: str) -> bool:
        self._check_open()
        return self._context_pins.get(scope, {}).pop(key, None) is not None

    async def list_pins(self, scope: str) -> list[tuple[str, Any]]:
        self._check_open()
        return pins_kept(self.records, scope, self._context_pins.get(scope, {}).items())
