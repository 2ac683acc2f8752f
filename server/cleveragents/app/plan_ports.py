"""What the application layer needs from the store to keep plans across restarts."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from cleveragents.domain.plan import Decision, Plan, State


class PlanRepository(Protocol):
    """Plans and everything hanging off them. Each write call is one transaction.

    Writes that name a plan raise ``KeyError`` when it isn't stored; malformed input
    (a duplicate id or overlay path, a record missing fields, a decision of another
    plan) raises ``ValueError`` before anything is written.
    """

    # -- plans ---------------------------------------------------------------------
    async def add_plan(self, plan: Plan) -> None:
        """Insert; ``ValueError`` when a plan with that id exists."""

    async def save_plan(self, plan: Plan) -> None:
        """Replace a stored plan; ``KeyError`` when it is missing."""

    async def get_plan(self, plan_id: str) -> Plan | None: ...

    async def list_plans(
        self, *, session_id: str | None = None, limit: int, before: int | None = None
    ) -> list[tuple[int, Plan]]:
        """Newest first, as (position, plan); ``before`` is the last position of the
        previous page."""

    async def count_plans(self, *, session_id: str | None = None) -> int: ...

    async def plans_in_states(self, states: Collection[State]) -> list[Plan]:
        """Oldest first; after a restart, finds the plans that were running."""

    async def save_plan_state(
        self, plan: Plan, decisions: list[Decision], overlay_records: list[dict[str, Any]] | None
    ) -> None:
        """Save the plan, upsert its decisions and (unless ``None``) replace its overlay,
        all or nothing."""

    # -- decisions -----------------------------------------------------------------
    async def save_decision(self, decision: Decision) -> None:
        """Insert or replace by decision id; a replaced decision keeps its place."""

    async def list_decisions(self, plan_id: str) -> list[Decision]:
        """In the order they were first saved."""

    async def get_decision(self, plan_id: str, decision_id: str) -> Decision | None: ...

    # -- overlay and checkpoint ----------------------------------------------------
    async def replace_overlay(self, plan_id: str, records: list[dict[str, Any]]) -> None:
        """Replace all the plan's overlay records; each has a unique "path"."""

    async def load_overlay(self, plan_id: str) -> list[dict[str, Any]]:
        """In the order last given to ``replace_overlay``."""

    async def put_checkpoint(self, plan_id: str, checkpoint: dict[str, Any]) -> None: ...

    async def get_checkpoint(self, plan_id: str) -> dict[str, Any] | None: ...

    # -- artifacts index -----------------------------------------------------------
    async def add_plan_artifact(self, plan_id: str, record: dict[str, Any]) -> None:
        """Index an artifact whose bytes are in the blob store. The record holds
        artifact_id, decision_id, name, media_type, blob, size and created_at."""

    async def list_plan_artifacts(self, plan_id: str) -> list[dict[str, Any]]:
        """In insertion order."""

    # -- context pins --------------------------------------------------------------
    async def set_pin(self, scope: str, key: str, value: Any) -> None:
        """Upsert a JSON value under ("session:<id>" | "plan:<id>", key); an updated
        pin keeps its place."""

    async def delete_pin(self, scope: str, key: str) -> bool:
        """``True`` when the pin existed."""

    async def list_pins(self, scope: str) -> list[tuple[str, Any]]:
        """(key, value) in insertion order."""
