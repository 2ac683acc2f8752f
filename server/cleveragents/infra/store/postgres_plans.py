"""Plans in the PostgreSQL store (plans, decisions, overlays, checkpoints, artifacts), and
context pins (migration 2 in ``postgres_schema.py``).

The same rows as the SQLite store's (``sqlite_plans.py``), checked the same way, so
both fail alike; every write call is one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

from cleveragents.domain.plan import Decision, Plan, State
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, PlanArtifact
from cleveragents.infra.store._pg import Connection, PgRepository
from cleveragents.infra.store.postgres_schema import LIVE_RUNNERS_SQL
from cleveragents.infra.store.records import fill_async, kept
from cleveragents.infra.store.sqlite_plans import check_decisions, overlay_rows, pins_kept

T = TypeVar("T")
_NO_CURSOR = 2**63 - 1


async def _require_plan(db: Connection, plan_id: str) -> None:
    """The plan exists, and is locked until the commit (so it can't go meanwhile)."""
    cur = await db.execute("SELECT 1 FROM plans WHERE plan_id = %s FOR SHARE", (plan_id,))
    if await cur.fetchone() is None:
        raise KeyError(plan_id)


async def _update_plan(db: Connection, plan: Plan, runner: int | None) -> None:
    cur = await db.execute("UPDATE plans SET session_id = %s, state = %s, body = %s, runner = %s WHERE plan_id = %s",
                           (plan.session_id, plan.state.value, json.dumps(plan.to_dict()), runner, plan.plan_id))
    if cur.rowcount != 1:
        raise KeyError(plan.plan_id)


async def _upsert_decisions(db: Connection, decisions: Iterable[Decision]) -> None:
    # DO UPDATE keeps the row's seq, so the tree keeps its order.
    rows = [(d.plan_id, d.decision_id, json.dumps(d.to_dict())) for d in decisions]
    if rows:
        async with db.cursor() as cur:
            await cur.executemany(
                "INSERT INTO plan_decisions (plan_id, decision_id, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (plan_id, decision_id) DO UPDATE SET body = excluded.body", rows)


async def _replace_overlay(db: Connection, plan_id: str, rows: list[tuple[str, OverlayRecord]]) -> None:
    await db.execute("DELETE FROM plan_overlay WHERE plan_id = %s", (plan_id,))
    if rows:
        async with db.cursor() as cur:
            await cur.executemany(
                "INSERT INTO plan_overlay (plan_id, path, position, record) VALUES (%s, %s, %s, %s)",
                [(plan_id, path, position, json.dumps(record.to_dict()))
                 for position, (path, record) in enumerate(rows)])


class PostgresPlans(PgRepository):
    """Plans and what hangs off them: decisions, overlay, checkpoint, artifacts index.
    Each plan records the replica that last wrote it (``runner``, set when the store
    opens), so a replica's start-up repair leaves its live peers' running plans alone."""

    runner: int | None = None

    async def _read_one(self, store: str, record_id: str, sql: str, args: tuple[Any, ...],
                        build: Callable[[Any], T]) -> T | None:
        row = await self._one(sql, args)
        return None if row is None else self.records.load(store, record_id, row[0], build)

    async def _read_kept(self, store: str, sql: str, args: tuple[Any, ...], build: Callable[[Any], T]) -> list[T]:
        return kept(await self._all(sql, args), store, self.records, build)

    # -- plans ---------------------------------------------------------------------
    async def add_plan(self, plan: Plan) -> None:
        written = await self._rowcount(
            "INSERT INTO plans (plan_id, session_id, state, body, runner) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (plan_id) DO NOTHING",
            (plan.plan_id, plan.session_id, plan.state.value, json.dumps(plan.to_dict()), self.runner))
        if written != 1:
            raise ValueError(f"plan {plan.plan_id} already exists")

    async def save_plan(self, plan: Plan) -> None:
        async with self._db.connection() as db:
            await _update_plan(db, plan, self.runner)

    async def get_plan(self, plan_id: str) -> Plan | None:
        return await self._read_one("plans", plan_id, "SELECT body FROM plans WHERE plan_id = %s", (plan_id,),
                                    Plan.from_dict)

    async def list_plans(
        self, *, session_id: str | None = None, limit: int, before: int | None = None
    ) -> list[tuple[int, Plan]]:
        async def fetch(below: int | None, n: int) -> list[tuple[Any, ...]]:
            cursor = _NO_CURSOR if below is None else below
            if session_id is None:
                return await self._all("SELECT seq, plan_id, body FROM plans WHERE seq < %s "
                                       "ORDER BY seq DESC LIMIT %s", (cursor, n))
            return await self._all("SELECT seq, plan_id, body FROM plans WHERE session_id = %s AND seq < %s "
                                   "ORDER BY seq DESC LIMIT %s", (session_id, cursor, n))

        def decode(row: tuple[Any, ...]) -> Plan | None:
            return self.records.skip("plans", row[1], row[2], Plan.from_dict)

        return await fill_async(fetch, decode, before, limit)

    async def count_plans(self, *, session_id: str | None = None) -> int:
        if session_id is None:
            row = await self._one("SELECT COUNT(*) FROM plans")
        else:
            row = await self._one("SELECT COUNT(*) FROM plans WHERE session_id = %s", (session_id,))
        return int(row[0]) if row else 0

    async def plans_in_states(self, states: Collection[State]) -> list[Plan]:
        if not states:
            return []
        values = [State(s).value for s in states]
        # Those no live replica other than this one wrote last (plans_in_states is the repair's list).
        sql = ("SELECT plan_id, body FROM plans WHERE state = ANY(%s) AND (runner IS NULL OR runner = %s OR "
               f"runner::bigint NOT IN ({LIVE_RUNNERS_SQL})) ORDER BY seq")
        return await self._read_kept("plans", sql, (values, self.runner), Plan.from_dict)

    async def save_plan_state(
        self, plan: Plan, decisions: list[Decision], overlay_records: list[OverlayRecord] | None
    ) -> None:
        check_decisions(plan.plan_id, decisions)
        rows = overlay_rows(overlay_records) if overlay_records is not None else None
        async with self._db.transaction() as db:
            await _update_plan(db, plan, self.runner)
            await _upsert_decisions(db, decisions)
            if rows is not None:
                await _replace_overlay(db, plan.plan_id, rows)

    # -- decisions -----------------------------------------------------------------
    async def save_decision(self, decision: Decision) -> None:
        async with self._db.transaction() as db:
            await _require_plan(db, decision.plan_id)
            await _upsert_decisions(db, [decision])

    async def list_decisions(self, plan_id: str) -> list[Decision]:
        sql = "SELECT plan_id || '/' || decision_id, body FROM plan_decisions WHERE plan_id = %s ORDER BY seq"
        return await self._read_kept("plan_decisions", sql, (plan_id,), Decision.from_dict)

    async def get_decision(self, plan_id: str, decision_id: str) -> Decision | None:
        sql = "SELECT body FROM plan_decisions WHERE plan_id = %s AND decision_id = %s"
        return await self._read_one("plan_decisions", f"{plan_id}/{decision_id}", sql, (plan_id, decision_id),
                                    Decision.from_dict)

    # -- overlay and checkpoint ----------------------------------------------------
    async def replace_overlay(self, plan_id: str, records: list[OverlayRecord]) -> None:
        rows = overlay_rows(records)
        async with self._db.transaction() as db:
            await _require_plan(db, plan_id)
            await _replace_overlay(db, plan_id, rows)

    async def load_overlay(self, plan_id: str) -> list[OverlayRecord]:
        """Every record, or UnreadableRecordError: an overlay missing a file would apply wrong."""
        rows = await self._all("SELECT path, record FROM plan_overlay WHERE plan_id = %s ORDER BY position",
                               (plan_id,))
        return [self.records.load("plan_overlay", f"{plan_id}/{path}", record, OverlayRecord.from_dict)
                for path, record in rows]

    async def put_checkpoint(self, plan_id: str, checkpoint: Checkpoint) -> None:
        body = json.dumps(checkpoint.to_dict())
        async with self._db.transaction() as db:
            await _require_plan(db, plan_id)
            await db.execute("INSERT INTO plan_checkpoints (plan_id, checkpoint) VALUES (%s, %s) "
                             "ON CONFLICT (plan_id) DO UPDATE SET checkpoint = excluded.checkpoint", (plan_id, body))

    async def get_checkpoint(self, plan_id: str) -> Checkpoint | None:
        sql = "SELECT checkpoint FROM plan_checkpoints WHERE plan_id = %s"
        return await self._read_one("plan_checkpoints", plan_id, sql, (plan_id,), Checkpoint.from_dict)

    # -- artifacts index -----------------------------------------------------------
    async def add_plan_artifact(self, plan_id: str, artifact: PlanArtifact) -> None:
        artifact_id, body = artifact.artifact_id, json.dumps(artifact.to_dict())
        async with self._db.transaction() as db:
            await _require_plan(db, plan_id)
            cur = await db.execute("INSERT INTO plan_artifacts (plan_id, artifact_id, record) VALUES (%s, %s, %s) "
                                   "ON CONFLICT (plan_id, artifact_id) DO NOTHING", (plan_id, artifact_id, body))
            if cur.rowcount != 1:
                raise ValueError(f"artifact {artifact_id} of plan {plan_id} already exists")

    async def list_plan_artifacts(self, plan_id: str) -> list[PlanArtifact]:
        sql = "SELECT plan_id || '/' || artifact_id, record FROM plan_artifacts WHERE plan_id = %s ORDER BY seq"
        return await self._read_kept("plan_artifacts", sql, (plan_id,), PlanArtifact.from_dict)


class PostgresPins(PgRepository):
    """Context pins, under a session's or a plan's scope."""

    async def set_pin(self, scope: str, key: str, value: Any) -> None:
        await self._rowcount("INSERT INTO context_pins (scope, key, value) VALUES (%s, %s, %s) "
                             "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value",
                             (scope, key, json.dumps(value)))

    async def delete_pin(self, scope: str, key: str) -> bool:
        return await self._rowcount("DELETE FROM context_pins WHERE scope = %s AND key = %s", (scope, key)) == 1

    async def list_pins(self, scope: str) -> list[tuple[str, Any]]:
        rows = await self._all("SELECT key, value FROM context_pins WHERE scope = %s ORDER BY seq", (scope,))
        return pins_kept(self.records, scope, rows)
