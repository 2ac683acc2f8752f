"""What the plan service needs: a store to keep plans across restarts, the tools its
steps call and the actions plans are made from."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from cleveragents.domain.plan import Decision, Plan, State
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, PlanArtifact
from cleveragents.domain.tools import Tool

if TYPE_CHECKING:
    from cleveragents.app.registry import ResolvedAction


class ToolLookup(Protocol):
    """The tools a plan's steps call (``app.registry.ToolRegistry``)."""

    def get(self, name: str) -> Tool:
        """``ResourceNotFoundError`` when there is no such tool."""


class ActionResolver(Protocol):
    """The actions a plan is made from (``app.registry.ActionRegistry``)."""

    def resolve(self, name: str, arguments: Mapping[str, Any]) -> ResolvedAction:
        """Blocking (it may read the action files); raises when the arguments don't fit."""


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
        self, plan: Plan, decisions: list[Decision], overlay_records: list[OverlayRecord] | None
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
    async def replace_overlay(self, plan_id: str, records: list[OverlayRecord]) -> None:
        """Replace all the plan's overlay records; each has a unique path."""

    async def load_overlay(self, plan_id: str) -> list[OverlayRecord]:
        """In the order last given to ``replace_overlay``."""

    async def put_checkpoint(self, plan_id: str, checkpoint: Checkpoint) -> None: ...

    async def get_checkpoint(self, plan_id: str) -> Checkpoint | None: ...

    # -- artifacts index -----------------------------------------------------------
    async def add_plan_artifact(self, plan_id: str, artifact: PlanArtifact) -> None:
        """Index an artifact whose bytes are in the blob store; ``ValueError`` when the
        plan has one with that id."""

    async def list_plan_artifacts(self, plan_id: str) -> list[PlanArtifact]:
        """In insertion order."""
