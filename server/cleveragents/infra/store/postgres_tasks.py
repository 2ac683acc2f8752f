"""Tasks and push configs in the PostgreSQL store: O(page) listing, O(1) counts, an exact cap.

The schema is migration 1 in ``postgres_schema.py``. A page walks an index in ``seq``
order and reads about a page of rows; counts read the counters the trigger keeps. A
write that makes a task terminal takes a transaction-scoped advisory lock first, then
evicts the earliest-terminal tasks beyond the cap before its commit: terminal writes
from every replica take turns, so no committed state ever holds more than the cap.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import psycopg

from cleveragents.domain.page_budget import PageBudget
from cleveragents.domain.task import TERMINAL_STATES, PushConfig, Task, TaskState
from cleveragents.infra.store._pg import Database, PgRepository
from cleveragents.infra.store.postgres_schema import LIVE_RUNNERS_SQL, TERMINAL_LOCK
from cleveragents.infra.store.records import RecordReader, fill_async, kept
from cleveragents.infra.store.sqlite_tasks import (
    DEFAULT_TERMINAL_CAP,
    LIVE_STATES,
    after_instant,
    checked_terminal_cap,
    count_query,
    state_values,
    status_instant,
)
from cleveragents.infra.store.task_json import TaskBodies, dumps

_TERMINAL_VALUES = [state.value for state in TERMINAL_STATES]
_LIVE_VALUES = [state.value for state in LIVE_STATES]
_NO_CURSOR = 2**63 - 1
_ROW = "SELECT seq, task_id, body FROM tasks"

INSERT_SQL = ("INSERT INTO tasks (task_id, context_id, state, status_at, terminal_seq, body, runner) "
              "VALUES (%s, %s, %s, %s, CASE WHEN %s THEN nextval('tasks_terminal_order') END, %s, %s) "
              "ON CONFLICT (task_id) DO NOTHING")
UPDATE_SQL = ("UPDATE tasks SET context_id = %s, state = %s, status_at = %s, body = %s, runner = %s, terminal_seq = "
              "CASE WHEN %s THEN COALESCE(terminal_seq, nextval('tasks_terminal_order')) END WHERE task_id = %s")
# One statement: the earliest-terminal tasks beyond the cap go (push configs cascade).
EVICT_SQL = ("DELETE FROM tasks WHERE seq IN (SELECT seq FROM tasks WHERE terminal_seq IS NOT NULL "
             "ORDER BY terminal_seq LIMIT GREATEST((SELECT COALESCE(SUM(n), 0) FROM task_state_counts "
             "WHERE state = ANY(%s)) - %s, 0))")
# The live tasks no live replica runs: none wrote them, this one did, or the one that
# did no longer holds its lock (it stopped, or was killed).
ORPHANS_SQL = ("SELECT task_id, body FROM tasks WHERE state = ANY(%s) AND (runner IS NULL OR runner = %s OR "
               f"runner::bigint NOT IN ({LIVE_RUNNERS_SQL})) ORDER BY seq")
# The live tasks of replicas that are gone (this one's are left to it).
GONE_SQL = ORPHANS_SQL.replace("runner IS NULL OR runner = %s OR ", "runner <> %s AND ")
WAITING_SQL = (f"{_ROW} WHERE context_id = %s AND state IN ('auth-required', 'input-required') AND seq < %s "
               "ORDER BY seq DESC LIMIT %s")


def list_query(context_id: str | None, states: list[str] | None, status_after: str | None,
               limit: int, before: int | None) -> tuple[str, list[Any]]:
    """The SQL for one page, newest first: a context through its own index, several
    states as per-state index walks merged, each reading about a page."""
    cursor = _NO_CURSOR if before is None else before
    if context_id is None and status_after is None and states is not None:
        arm = f"({_ROW} WHERE state = %s AND seq < %s ORDER BY seq DESC LIMIT %s)"
        arms = " UNION ALL ".join([arm] * len(states))
        page_args: list[Any] = [v for s in states for v in (s, cursor, limit)]
        return f"SELECT * FROM ({arms}) AS page ORDER BY seq DESC LIMIT %s", [*page_args, limit]
    clauses: list[str] = ["seq < %s"]
    args: list[Any] = [cursor]
    if context_id is not None:
        clauses.append("context_id = %s")
        args.append(context_id)
    if status_after is not None:
        clauses.append("status_at > %s")
        args.append(after_instant(status_after))
    if states is not None:
        clauses.append("state = ANY(%s)")
        args.append(states)
    return f"{_ROW} WHERE {' AND '.join(clauses)} ORDER BY seq DESC LIMIT %s", [*args, limit]


class PostgresTasks(PgRepository):
    """Tasks in the PostgreSQL store; terminal tasks beyond ``terminal_cap`` are
    evicted, with their push configs, in the transaction that passed the cap."""

    def __init__(self, db: Database, records: RecordReader, *, terminal_cap: int = DEFAULT_TERMINAL_CAP):
        super().__init__(db, records)
        self._terminal_cap = checked_terminal_cap(terminal_cap)
        self._bodies = TaskBodies()
        self.runner: int | None = None  # this replica's id, set when the store opens

    async def _write_terminal(self, sql: str, args: tuple[Any, ...]) -> int:
        """``sql`` for a task that is terminal: in turn with the other terminal writes,
        then the eviction, all in one transaction; the rows it wrote."""
        # Pipelined: the five statements go in one round trip (the eviction runs whether
        # or not the write found its row: then it has nothing to do).
        async with self._db.connection() as conn:
            async with conn.pipeline(), conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (TERMINAL_LOCK,))
                written = await conn.execute(sql, args)
                await conn.execute(EVICT_SQL, (_TERMINAL_VALUES, self._terminal_cap))
            return written.rowcount

    async def add_task(self, task: Task) -> bool:
        args = (task.id, task.context_id, task.state.value, status_instant(task.status.timestamp),
                task.terminal, self._bodies.body(task), None if task.terminal else self.runner)
        if task.terminal:
            return await self._write_terminal(INSERT_SQL, args) == 1
        return await self._rowcount(INSERT_SQL, args) == 1

    async def save_task(self, task: Task) -> None:
        args = (task.context_id, task.state.value, status_instant(task.status.timestamp), self._bodies.body(task),
                None if task.terminal else self.runner, task.terminal, task.id)
        found = await (self._write_terminal(UPDATE_SQL, args) if task.terminal else self._rowcount(UPDATE_SQL, args))
        if not found:
            raise KeyError(task.id)

    async def delete_context(self, context_id: str) -> int:
        """The counters follow (triggers); push configs and event logs cascade."""
        return await self._rowcount("DELETE FROM tasks WHERE context_id = %s", (context_id,))

    async def get_task(self, task_id: str) -> Task | None:
        row = await self._one("SELECT body FROM tasks WHERE task_id = %s", (task_id,))
        return self.records.load("tasks", task_id, row[0], Task.from_dict) if row else None

    def _decode(self, row: tuple[Any, ...]) -> Task | None:
        return self.records.skip("tasks", row[1], row[2], Task.from_dict)

    async def list_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None, limit: int, before: int | None = None, budget: PageBudget | None = None,
    ) -> list[tuple[int, Task]]:
        values = state_values(states)
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        if limit == 0 or values == []:
            return []

        async def fetch(below: int | None, n: int) -> list[tuple[Any, ...]]:
            return await self._all(*list_query(context_id, values, status_after, n, below))

        return await fill_async(fetch, self._decode, before, limit, budget)

    async def count_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None,
    ) -> int:
        values = state_values(states)
        if values == []:
            return 0
        row = await self._one(*count_query(context_id, values, status_after, mark="%s"))
        return int(row[0]) if row else 0

    async def live_tasks(self) -> list[Task]:
        """The non-terminal tasks, oldest first, but those another live replica runs:
        a replica that starts repairs what was interrupted, not its peers' work."""
        rows = await self._all(ORPHANS_SQL, (_LIVE_VALUES, self.runner))
        return kept(rows, "tasks", self.records, Task.from_dict)

    async def orphaned_tasks(self) -> list[Task]:
        """The live tasks written by replicas that are gone, oldest first (the sweep)."""
        rows = await self._all(GONE_SQL, (_LIVE_VALUES, self.runner))
        return kept(rows, "tasks", self.records, Task.from_dict)

    async def waiting_task(self, context_id: str) -> Task | None:
        async def fetch(below: int | None, n: int) -> list[tuple[Any, ...]]:
            return await self._all(WAITING_SQL, (context_id, _NO_CURSOR if below is None else below, n))

        found = await fill_async(fetch, self._decode, None, 1)
        return found[0][1] if found else None

    async def total(self) -> int:
        row = await self._one("SELECT COALESCE(SUM(n), 0) FROM task_state_counts")
        return int(row[0]) if row else 0


class PostgresPushConfigs(PgRepository):
    """Push configs, kept beside their tasks (a task's deletion takes its configs)."""

    async def put_push_config(self, cfg: PushConfig) -> None:
        try:
            await self._rowcount(
                "INSERT INTO push_configs (task_id, config_id, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (task_id, config_id) DO UPDATE SET body = excluded.body",
                (cfg.task_id, cfg.id, dumps(cfg.to_dict())))
        except psycopg.errors.ForeignKeyViolation:
            raise KeyError(cfg.task_id) from None

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        row = await self._one("SELECT body FROM push_configs WHERE task_id = %s AND config_id = %s",
                              (task_id, config_id))
        if row is None:
            return None
        return self.records.load("push_configs", f"{task_id}/{config_id}", row[0], PushConfig.from_dict)

    async def list_push_configs(self, task_id: str) -> list[PushConfig]:
        rows = await self._all("SELECT config_id, body FROM push_configs WHERE task_id = %s ORDER BY seq", (task_id,))
        return kept(((f"{task_id}/{config_id}", body) for config_id, body in rows), "push_configs", self.records,
                    PushConfig.from_dict)

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return await self._rowcount("DELETE FROM push_configs WHERE task_id = %s AND config_id = %s",
                                    (task_id, config_id)) == 1
