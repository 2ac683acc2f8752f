"""Plans in the SQLite store (plans, decisions, overlays, checkpoints, artifacts), and
context pins.

Bodies are stored as the domain's own JSON (`to_dict()`); only the columns that are
queried (ids, session, state) are split out. Every write call is one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.plan import Decision, Plan, State
from cleveragents.domain.plan_files import Checkpoint, OverlayRecord, PlanArtifact
from cleveragents.infra.store._sql import SqliteRepository, newest_first
from cleveragents.infra.store.records import RecordReader, as_is, fill, kept

T = TypeVar("T")
# The schema of plans and pins is migration 3 of ``sqlite_schema.py``.


# -- checks both stores share, so they fail the same way ----------------------------
def overlay_rows(records: list[OverlayRecord]) -> list[tuple[str, OverlayRecord]]:
    """(path, record) pairs; ValueError when a path repeats."""
    seen: set[str] = set()
    rows = []
    for record in records:
        path = record.path
        if not isinstance(path, str):
            raise TypeError(f"overlay path must be a string, not {type(path).__name__}")
        if path in seen:
            raise ValueError(f"overlay path {path!r} appears twice")
        seen.add(path)
        rows.append((path, record))
    return rows


def check_decisions(plan_id: str, decisions: Iterable[Decision]) -> None:
    strays = sorted({d.decision_id for d in decisions if d.plan_id != plan_id})
    if strays:
        raise ValueError(f"decisions {strays} don't belong to plan {plan_id}")


# -- statements (each runs inside the caller's transaction) -------------------------
def _require_plan(db: sqlite3.Connection, plan_id: str) -> None:
    if db.execute("SELECT 1 FROM plans WHERE plan_id = ?", (plan_id,)).fetchone() is None:
        raise KeyError(plan_id)


def _insert_plan(db: sqlite3.Connection, plan: Plan) -> None:
    cur = db.execute(
        "INSERT INTO plans (plan_id, session_id, state, body) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (plan_id) DO NOTHING",
        (plan.plan_id, plan.session_id, plan.state.value, json.dumps(plan.to_dict())),
    )
    if cur.rowcount != 1:
        raise ValueError(f"plan {plan.plan_id} already exists")


def _update_plan(db: sqlite3.Connection, plan: Plan) -> None:
    cur = db.execute(
        "UPDATE plans SET session_id = ?, state = ?, body = ? WHERE plan_id = ?",
        (plan.session_id, plan.state.value, json.dumps(plan.to_dict()), plan.plan_id),
    )
    if cur.rowcount != 1:
        raise KeyError(plan.plan_id)


def _upsert_decisions(db: sqlite3.Connection, decisions: Iterable[Decision]) -> None:
    # DO UPDATE (not REPLACE) keeps the row's seq, so the tree keeps its order.
    db.executemany(
        "INSERT INTO plan_decisions (plan_id, decision_id, body) VALUES (?, ?, ?) "
        "ON CONFLICT (plan_id, decision_id) DO UPDATE SET body = excluded.body",
        ((d.plan_id, d.decision_id, json.dumps(d.to_dict())) for d in decisions),
    )


def _replace_overlay(db: sqlite3.Connection, plan_id: str, rows: list[tuple[str, OverlayRecord]]) -> None:
    db.execute("DELETE FROM plan_overlay WHERE plan_id = ?", (plan_id,))
    db.executemany(
        "INSERT INTO plan_overlay (plan_id, path, position, record) VALUES (?, ?, ?, ?)",
        ((plan_id, path, position, json.dumps(record.to_dict())) for position, (path, record) in enumerate(rows)),
    )


def pins_kept(records: RecordReader, scope: str, rows: Iterable[tuple[str, str]]) -> list[tuple[str, Any]]:
    """(key, value) of the pins that can be served (a value may be any JSON, null too)."""
    found = []
    for key, text in rows:
        try:
            found.append((key, records.load("context_pins", f"{scope}/{key}", text, as_is)))
        except UnreadableRecordError:
            continue
    return found


class SqlitePlans(SqliteRepository):
    """Plans and what hangs off them: decisions, overlay, checkpoint, artifacts index."""

    async def _read_one(self, store: str, record_id: str, sql: str, args: tuple[Any, ...],
                        build: Callable[[Any], T]) -> T | None:
        """The record in the first column of the one row ``sql`` finds (None without a
        row); UnreadableRecordError when it can't be served."""
        def run() -> T | None:
            row = self._db().execute(sql, args).fetchone()
            return None if row is None else self.records.load(store, record_id, row[0], build)

        return await self._run(run)

    async def _read_kept(self, store: str, sql: str, args: tuple[Any, ...], build: Callable[[Any], T]) -> list[T]:
        """The records of the ``(id, text)`` rows ``sql`` finds, without those that can't be served."""
        return await self._run(lambda: kept(self._db().execute(sql, args), store, self.records, build))

    # -- plans ---------------------------------------------------------------------
    async def add_plan(self, plan: Plan) -> None:
        await self._write(lambda db: _insert_plan(db, plan))

    async def save_plan(self, plan: Plan) -> None:
        await self._write(lambda db: _update_plan(db, plan))

    async def get_plan(self, plan_id: str) -> Plan | None:
        return await self._read_one("plans", plan_id, "SELECT body FROM plans WHERE plan_id = ?", (plan_id,),
                                    Plan.from_dict)

    async def list_plans(
        self, *, session_id: str | None = None, limit: int, before: int | None = None
    ) -> list[tuple[int, Plan]]:
        def fetch(below: int | None, n: int) -> list[tuple[int, str, str]]:
            return self._db().execute(*newest_first("seq, plan_id, body", "plans", {"session_id": session_id},
                                                    below, n)).fetchall()

        def decode(row: tuple[int, str, str]) -> Plan | None:
            return self.records.skip("plans", row[1], row[2], Plan.from_dict)

        return await self._run(lambda: fill(fetch, decode, before, limit))

    async def count_plans(self, *, session_id: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM plans"
        args: tuple[str, ...] = ()
        if session_id is not None:
            sql, args = sql + " WHERE session_id = ?", (session_id,)
        return await self._run(lambda: self._db().execute(sql, args).fetchone()[0])

    async def plans_in_states(self, states: Collection[State]) -> list[Plan]:
        if not states:
            return []
        values = tuple(State(s).value for s in states)
        marks = ", ".join("?" * len(values))
        sql = f"SELECT plan_id, body FROM plans WHERE state IN ({marks}) ORDER BY seq"
        return await self._read_kept("plans", sql, values, Plan.from_dict)

    async def save_plan_state(
        self, plan: Plan, decisions: list[Decision], overlay_records: list[OverlayRecord] | None
    ) -> None:
        check_decisions(plan.plan_id, decisions)
        rows = overlay_rows(overlay_records) if overlay_records is not None else None

        def work(db: sqlite3.Connection) -> None:
            _update_plan(db, plan)
            _upsert_decisions(db, decisions)
            if rows is not None:
                _replace_overlay(db, plan.plan_id, rows)

        await self._write(work)

    # -- decisions -----------------------------------------------------------------
    async def save_decision(self, decision: Decision) -> None:
        def work(db: sqlite3.Connection) -> None:
            _require_plan(db, decision.plan_id)
            _upsert_decisions(db, [decision])

        await self._write(work)

    async def list_decisions(self, plan_id: str) -> list[Decision]:
        sql = "SELECT plan_id || '/' || decision_id, body FROM plan_decisions WHERE plan_id = ? ORDER BY seq"
        return await self._read_kept("plan_decisions", sql, (plan_id,), Decision.from_dict)

    async def get_decision(self, plan_id: str, decision_id: str) -> Decision | None:
        sql = "SELECT body FROM plan_decisions WHERE plan_id = ? AND decision_id = ?"
        return await self._read_one("plan_decisions", f"{plan_id}/{decision_id}", sql, (plan_id, decision_id),
                                    Decision.from_dict)

    # -- overlay and checkpoint ----------------------------------------------------
    async def replace_overlay(self, plan_id: str, records: list[OverlayRecord]) -> None:
        rows = overlay_rows(records)

        def work(db: sqlite3.Connection) -> None:
            _require_plan(db, plan_id)
            _replace_overlay(db, plan_id, rows)

        await self._write(work)

    async def load_overlay(self, plan_id: str) -> list[OverlayRecord]:
        """Every record, or UnreadableRecordError: an overlay missing a file would apply wrong."""
        sql = "SELECT path, record FROM plan_overlay WHERE plan_id = ? ORDER BY position"

        def run() -> list[OverlayRecord]:
            return [self.records.load("plan_overlay", f"{plan_id}/{path}", record, OverlayRecord.from_dict)
                    for path, record in self._db().execute(sql, (plan_id,))]

        return await self._run(run)

    async def put_checkpoint(self, plan_id: str, checkpoint: Checkpoint) -> None:
        body = json.dumps(checkpoint.to_dict())

        def work(db: sqlite3.Connection) -> None:
            _require_plan(db, plan_id)
            db.execute(
                "INSERT INTO plan_checkpoints (plan_id, checkpoint) VALUES (?, ?) "
                "ON CONFLICT (plan_id) DO UPDATE SET checkpoint = excluded.checkpoint",
                (plan_id, body),
            )

        await self._write(work)

    async def get_checkpoint(self, plan_id: str) -> Checkpoint | None:
        sql = "SELECT checkpoint FROM plan_checkpoints WHERE plan_id = ?"
        return await self._read_one("plan_checkpoints", plan_id, sql, (plan_id,), Checkpoint.from_dict)

    # -- artifacts index -----------------------------------------------------------
    async def add_plan_artifact(self, plan_id: str, artifact: PlanArtifact) -> None:
        artifact_id, body = artifact.artifact_id, json.dumps(artifact.to_dict())

        def work(db: sqlite3.Connection) -> None:
            _require_plan(db, plan_id)
            cur = db.execute(
                "INSERT INTO plan_artifacts (plan_id, artifact_id, record) VALUES (?, ?, ?) "
                "ON CONFLICT (plan_id, artifact_id) DO NOTHING",
                (plan_id, artifact_id, body),
            )
            if cur.rowcount != 1:
                raise ValueError(f"artifact {artifact_id} of plan {plan_id} already exists")

        await self._write(work)

    async def list_plan_artifacts(self, plan_id: str) -> list[PlanArtifact]:
        sql = "SELECT plan_id || '/' || artifact_id, record FROM plan_artifacts WHERE plan_id = ? ORDER BY seq"
        return await self._read_kept("plan_artifacts", sql, (plan_id,), PlanArtifact.from_dict)


class SqlitePins(SqliteRepository):
    """Context pins, under a session's or a plan's scope."""

    async def set_pin(self, scope: str, key: str, value: Any) -> None:
        sql = (
            "INSERT INTO context_pins (scope, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value"
        )
        encoded = json.dumps(value)
        await self._write(lambda db: db.execute(sql, (scope, key, encoded)))

    async def delete_pin(self, scope: str, key: str) -> bool:
        sql = "DELETE FROM context_pins WHERE scope = ? AND key = ?"
        return await self._write(lambda db: db.execute(sql, (scope, key)).rowcount == 1)

    async def list_pins(self, scope: str) -> list[tuple[str, Any]]:
        sql = "SELECT key, value FROM context_pins WHERE scope = ? ORDER BY seq"

        return await self._run(lambda: pins_kept(self.records, scope, self._db().execute(sql, (scope,))))
