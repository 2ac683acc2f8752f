"""Plan storage for MemoryStore, with the same contract as SqlitePlanQueries.

Values are kept as JSON text, as SQLite keeps them: a caller mutating a dict later
can't change what was stored, and a value SQLite would reject fails here too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from cleveragents.domain.plan import Decision, Plan, State
from cleveragents.infra.store.sqlite_plans import (
    check_artifact,
    check_decisions,
    overlay_rows,
)


def _encode_overlay(records: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(record) for _, record in overlay_rows(records)]


class MemoryPlanQueries:
    """Mixed into MemoryStore, which calls `_init_plans()` and provides `_check_open`."""

    if TYPE_CHECKING:
        def _check_open(self) -> None: ...

    def _init_plans(self) -> None:
        self._plan_bodies: dict[str, tuple[int, str]] = {}  # plan_id -> (position, body)
        self._plan_seq = itertools.count(1)
        # Dicts keep insertion order, and assigning an existing key keeps its place.
        self._plan_decisions: dict[str, dict[str, str]] = {}
        self._plan_overlays: dict[str, list[str]] = {}
        self._plan_checkpoints: dict[str, str] = {}
        self._plan_artifacts: dict[str, dict[str, str]] = {}
        self._context_pins: dict[str, dict[str, str]] = {}

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
        return Plan.from_dict(json.loads(entry[1])) if entry else None

    async def list_plans(
        self, *, session_id: str | None = None, limit: int, before: int | None = None
    ) -> list[tuple[int, Plan]]:
        self._check_open()
        found: list[tuple[int, Plan]] = []
        for seq, body in sorted(self._plan_bodies.values(), reverse=True):
            if len(found) == limit:
                break
            plan = Plan.from_dict(json.loads(body))
            if (before is None or seq < before) and (session_id is None or plan.session_id == session_id):
                found.append((seq, plan))
        return found

    async def count_plans(self, *, session_id: str | None = None) -> int:
        self._check_open()
        plans = (Plan.from_dict(json.loads(body)) for _, body in self._plan_bodies.values())
        return sum(1 for plan in plans if session_id is None or plan.session_id == session_id)

    async def plans_in_states(self, states: Collection[State]) -> list[Plan]:
        self._check_open()
        wanted = {State(s) for s in states}
        plans = (Plan.from_dict(json.loads(body)) for _, body in sorted(self._plan_bodies.values()))
        return [plan for plan in plans if plan.state in wanted]

    async def save_plan_state(
        self, plan: Plan, decisions: list[Decision], overlay_records: list[dict[str, Any]] | None
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
        bodies = self._plan_decisions.get(plan_id, {}).values()
        return [Decision.from_dict(json.loads(body)) for body in bodies]

    async def get_decision(self, plan_id: str, decision_id: str) -> Decision | None:
        self._check_open()
        body = self._plan_decisions.get(plan_id, {}).get(decision_id)
        return Decision.from_dict(json.loads(body)) if body else None

    # -- overlay and checkpoint ----------------------------------------------------
    async def replace_overlay(self, plan_id: str, records: list[dict[str, Any]]) -> None:
        encoded = _encode_overlay(records)
        self._require_plan(plan_id)
        self._plan_overlays[plan_id] = encoded

    async def load_overlay(self, plan_id: str) -> list[dict[str, Any]]:
        self._check_open()
        return [json.loads(record) for record in self._plan_overlays.get(plan_id, [])]

    async def put_checkpoint(self, plan_id: str, checkpoint: dict[str, Any]) -> None:
        self._require_plan(plan_id)
        self._plan_checkpoints[plan_id] = json.dumps(checkpoint)

    async def get_checkpoint(self, plan_id: str) -> dict[str, Any] | None:
        self._check_open()
        body = self._plan_checkpoints.get(plan_id)
        return json.loads(body) if body is not None else None

    # -- artifacts index -----------------------------------------------------------
    async def add_plan_artifact(self, plan_id: str, record: dict[str, Any]) -> None:
        artifact_id = check_artifact(record)
        self._require_plan(plan_id)
        artifacts = self._plan_artifacts.setdefault(plan_id, {})
        if artifact_id in artifacts:
            raise ValueError(f"artifact {artifact_id} of plan {plan_id} already exists")
        artifacts[artifact_id] = json.dumps(record)

    async def list_plan_artifacts(self, plan_id: str) -> list[dict[str, Any]]:
        self._check_open()
        return [json.loads(record) for record in self._plan_artifacts.get(plan_id, {}).values()]

    # -- context pins --------------------------------------------------------------
    async def set_pin(self, scope: str, key: str, value: Any) -> None:
        self._check_open()
        self._context_pins.setdefault(scope, {})[key] = json.dumps(value)

    async def delete_pin(self, scope: str, key: str) -> bool:
        self._check_open()
        return self._context_pins.get(scope, {}).pop(key, None) is not None

    async def list_pins(self, scope: str) -> list[tuple[str, Any]]:
        self._check_open()
        return [(key, json.loads(value)) for key, value in self._context_pins.get(scope, {}).items()]
