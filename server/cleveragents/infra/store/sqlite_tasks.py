"""Tasks and push configs in the SQLite store: O(page) listing, O(1) counts, bounded retention.

The schema is migrations 2, 4 and 5 in ``sqlite.py``. A page walks an index in ``seq`` order
and reads about a page of rows (with ``status_after``, the timestamp index and a sort of
just its matches); per-state and per-context counters are kept by triggers in the same
transaction as the write, and the earliest-terminal tasks beyond the cap are evicted
through the ``terminal_seq`` index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, TypeVar

from cleveragents.domain.errors import ValidationError
from cleveragents.domain.page_budget import PageBudget
from cleveragents.domain.task import TERMINAL_STATES, PushConfig, Task, TaskState
from cleveragents.infra.store._sql import Runner, SqliteRepository, transaction
from cleveragents.infra.store.records import RecordReader, fill, kept
from cleveragents.infra.store.task_json import TaskBodies, dumps

T = TypeVar("T")

DEFAULT_TERMINAL_CAP = 10_000
LIVE_STATES = tuple(state for state in TaskState if not state.terminal)
_TERMINAL_VALUES = tuple(state.value for state in TERMINAL_STATES)
_NO_CURSOR = 2**63 - 1  # above every rowid, so the first page is the same query as the others
# The WHERE of the partial index tasks_waiting (migration 4): a query uses that index
# only when it repeats this filter word for word, so never change this text.
WAITING_STATES_SQL = "state IN ('auth-required', 'input-required')"
WAITING_SQL = (f"SELECT seq, task_id, body FROM tasks INDEXED BY tasks_waiting "
               f"WHERE context_id = ? AND {WAITING_STATES_SQL} AND seq < ? ORDER BY seq DESC LIMIT ?")
OLDEST_TERMINAL_SQL = "SELECT seq FROM tasks WHERE terminal_seq IS NOT NULL ORDER BY terminal_seq LIMIT ?"
# A task's place in the eviction order: the next one when it turns terminal, kept while
# it stays terminal, none while it is live.
_NEXT_TERMINAL_SEQ = "(SELECT COALESCE(MAX(terminal_seq), 0) + 1 FROM tasks)"
INSERT_SQL = ("INSERT INTO tasks (task_id, context_id, state, status_at, terminal_seq, body) "
              f"VALUES (?, ?, ?, ?, CASE WHEN ? THEN {_NEXT_TERMINAL_SEQ} END, ?) ON CONFLICT (task_id) DO NOTHING")
UPDATE_SQL = ("UPDATE tasks SET context_id = ?, state = ?, status_at = ?, body = ?, "
              f"terminal_seq = CASE WHEN ? THEN COALESCE(terminal_seq, {_NEXT_TERMINAL_SEQ}) END WHERE task_id = ?")
# The counters by state and context are kept by triggers: migration 5 of ``sqlite_schema.py``.


def checked_terminal_cap(cap: int) -> int:
    if cap < 1:
        raise ValueError(f"terminal_cap must be at least 1, not {cap}")
    return cap


@lru_cache(maxsize=256)  # timestamps repeat: a task is written more than once, and tasks share milliseconds
def status_instant(timestamp: str | None) -> str | None:
    """The timestamp as fixed-width UTC text, whose text order is time order; None
    when it is missing or not ISO 8601 (such a task matches no ``status_after``)."""
    if timestamp is None:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).isoformat(timespec="microseconds")
    except OverflowError:  # an offset that moves it past year 1 or 9999
        return None


def after_instant(status_after: str) -> str:
    """``status_after`` in the form ``status_instant`` stores; refuses non-timestamps."""
    instant = status_instant(status_after)
    if instant is None:
        raise ValidationError("status_after is not an ISO 8601 timestamp",
                              {"errors": [{"loc": ["status_after"], "msg": "not an ISO 8601 timestamp"}]})
    return instant


def state_values(states: Collection[TaskState] | None) -> list[str] | None:
    """Distinct state values in a stable order, so equal filters make equal SQL."""
    return None if states is None else sorted({TaskState(state).value for state in states})


def _marks(values: Collection[Any], mark: str = "?") -> str:
    return ", ".join([mark] * len(values))


def _body(value: PushConfig) -> str:
    return dumps(value.to_dict())


def _evict(db: sqlite3.Connection, cap: int) -> None:
    """Delete the earliest-terminal tasks beyond ``cap``; push configs cascade."""
    terminal = db.execute(f"SELECT COALESCE(SUM(n), 0) FROM task_state_counts WHERE state IN "
                          f"({_marks(_TERMINAL_VALUES)})", _TERMINAL_VALUES).fetchone()[0]
    if terminal <= cap:
        return
    rows = db.execute(OLDEST_TERMINAL_SQL, (terminal - cap,)).fetchall()
    db.executemany("DELETE FROM tasks WHERE seq = ?", rows)


def task_total(db: sqlite3.Connection) -> int:
    """Every stored task, from the counters (for health checks)."""
    return int(db.execute("SELECT COALESCE(SUM(n), 0) FROM task_state_counts").fetchone()[0])


def list_query(context_id: str | None, states: list[str] | None, status_after: str | None,
               limit: int, before: int | None) -> tuple[str, list[Any]]:
    """The SQL for one page, newest first. A context is walked through its own index,
    a ``status_after`` through the timestamp index, several states as a merge of
    per-state index walks: each reads about a page, never every task."""
    cursor = _NO_CURSOR if before is None else before
    columns = "SELECT seq, task_id, body FROM tasks"
    if context_id is not None or status_after is not None:
        index = "tasks_by_context" if context_id is not None else "tasks_by_status_at"
        clauses = ["seq < ?"]
        args: list[Any] = [cursor]
        if context_id is not None:
            clauses.append("context_id = ?")
            args.append(context_id)
        if status_after is not None:
            clauses.append("status_at > ?")
            args.append(after_instant(status_after))
        if states is not None:
            clauses.append(f"state IN ({_marks(states)})")
            args += states
        where = " AND ".join(clauses)
        return f"{columns} INDEXED BY {index} WHERE {where} ORDER BY seq DESC LIMIT ?", [*args, limit]
    if states is None:
        return f"{columns} WHERE seq < ? ORDER BY seq DESC LIMIT ?", [cursor, limit]
    arm = f"{columns} INDEXED BY tasks_by_state WHERE state = ? AND seq < ?"
    arms = " UNION ALL ".join([arm] * len(states))
    return f"{arms} ORDER BY seq DESC LIMIT ?", [*(v for s in states for v in (s, cursor)), limit]


def count_query(context_id: str | None, states: list[str] | None,
                status_after: str | None, *, mark: str = "?") -> tuple[str, list[Any]]:
    """The count of a listing, for both stores (``mark``: the driver's parameter mark,
    ``%s`` for psycopg). Without ``status_after`` it sums at most one counter row per
    state, which the stores' triggers keep."""
    clauses: list[str] = []
    args: list[Any] = []
    if status_after is not None:
        clauses.append(f"status_at > {mark}")
        args.append(after_instant(status_after))
    if context_id is not None:
        clauses.append(f"context_id = {mark}")
        args.append(context_id)
    if states is not None:
        clauses.append(f"state IN ({_marks(states, mark)})")
        args += states
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    if status_after is not None:
        return f"SELECT COUNT(*) FROM tasks{where}", args
    table = "task_context_counts" if context_id is not None else "task_state_counts"
    return f"SELECT COALESCE(SUM(n), 0) FROM {table}{where}", args


class SqliteTasks(SqliteRepository):
    """Tasks in the SQLite store; terminal tasks beyond ``terminal_cap`` are evicted,
    with their push configs.

    A write alone evicts before its commit. In a group commit the writes only note that
    an eviction is due, and it runs once, before the batch's commit (``catch_up``) or
    before an operation of the batch that reads what it would remove (``settled``): so
    no commit and no read ever holds more than the cap."""

    def __init__(self, run: Runner, db: Callable[[], sqlite3.Connection], records: RecordReader, *,
                 terminal_cap: int = DEFAULT_TERMINAL_CAP):
        super().__init__(run, db, records)
        self._terminal_cap = checked_terminal_cap(terminal_cap)
        self._evict_due = False  # only touched on the store's thread
        self._bodies = TaskBodies()

    def _evict_after(self, db: sqlite3.Connection, in_batch: bool) -> None:
        if in_batch:
            self._evict_due = True
        else:
            _evict(db, self._terminal_cap)

    def catch_up(self, db: sqlite3.Connection) -> None:
        """The eviction the batch's writes made due; before the batch commits."""
        if self._evict_due:
            self._evict_due = False  # a failed commit rolls back to a state within the cap
            _evict(db, self._terminal_cap)

    def settled(self, read: Callable[[], T]) -> T:
        """``read()`` once the due eviction has run, so it sees nothing beyond the cap."""
        if not self._evict_due:
            return read()
        db = self._db()
        try:
            with transaction(db):
                self.catch_up(db)
            return read()
        except BaseException:
            self._evict_due = True  # the operation's rollback undoes the eviction too
            raise

    # -- tasks ---------------------------------------------------------------------
    async def add_task(self, task: Task) -> bool:
        def run() -> bool:
            db = self._db()
            in_batch = db.in_transaction
            with transaction(db):
                inserted = db.execute(INSERT_SQL, (
                    task.id, task.context_id, task.state.value, status_instant(task.status.timestamp),
                    task.terminal, self._bodies.body(task))).rowcount == 1
                if inserted and task.terminal:
                    self._evict_after(db, in_batch)
            return inserted

        return await self._run(run)

    async def save_task(self, task: Task) -> None:
        def run() -> None:
            db = self._db()
            in_batch = db.in_transaction
            with transaction(db):
                found = db.execute(UPDATE_SQL, (
                    task.context_id, task.state.value, status_instant(task.status.timestamp), self._bodies.body(task),
                    task.terminal, task.id)).rowcount
                if not found:
                    raise KeyError(task.id)
                if task.terminal:
                    self._evict_after(db, in_batch)

        await self._run(run)

    async def delete_context(self, context_id: str) -> int:
        """The counters follow (triggers); push configs cascade."""
        def run() -> int:
            db = self._db()
            with transaction(db):
                return int(db.execute("DELETE FROM tasks WHERE context_id = ?", (context_id,)).rowcount)

        return await self._run(self.settled, run)

    async def get_task(self, task_id: str) -> Task | None:
        def run() -> Task | None:
            row = self._db().execute("SELECT body FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
            return self.records.load("tasks", task_id, row[0], Task.from_dict) if row else None

        return await self._run(self.settled, run)

    async def list_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None, limit: int, before: int | None = None, budget: PageBudget | None = None,
    ) -> list[tuple[int, Task]]:
        values = state_values(states)
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        if limit == 0 or values == []:
            return []

        def fetch(below: int | None, n: int) -> list[tuple[int, str, str]]:
            return self._db().execute(*list_query(context_id, values, status_after, n, below)).fetchall()

        def decode(row: tuple[int, str, str]) -> Task | None:
            return self.records.skip("tasks", row[1], row[2], Task.from_dict)

        return await self._run(self.settled, lambda: fill(fetch, decode, before, limit, budget))

    async def count_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None,
    ) -> int:
        values = state_values(states)
        if values == []:
            return 0
        sql, args = count_query(context_id, values, status_after)
        return await self._run(self.settled, lambda: self._db().execute(sql, args).fetchone()[0])

    async def live_tasks(self) -> list[Task]:
        live = [state.value for state in LIVE_STATES]
        sql = f"SELECT task_id, body FROM tasks INDEXED BY tasks_by_state WHERE state IN ({_marks(live)}) ORDER BY seq"
        return await self._run(lambda: kept(self._db().execute(sql, live), "tasks", self.records, Task.from_dict))

    async def waiting_task(self, context_id: str) -> Task | None:
        def fetch(below: int | None, n: int) -> list[tuple[int, str, str]]:
            cursor = _NO_CURSOR if below is None else below
            return self._db().execute(WAITING_SQL, (context_id, cursor, n)).fetchall()

        def decode(row: tuple[int, str, str]) -> Task | None:
            return self.records.skip("tasks", row[1], row[2], Task.from_dict)

        found = await self._run(lambda: fill(fetch, decode, None, 1))
        return found[0][1] if found else None



class SqlitePushConfigs(SqliteRepository):
    """Push configs, kept beside their tasks (a task's deletion takes its configs).
    Each call runs after the tasks' due eviction (``SqliteTasks.settled``)."""

    def __init__(self, run: Runner, db: Callable[[], sqlite3.Connection], records: RecordReader,
                 tasks: SqliteTasks):
        super().__init__(run, db, records)
        self._settled = tasks.settled

    async def put_push_config(self, cfg: PushConfig) -> None:
        def run() -> None:
            stored = self._db().execute(
                "INSERT INTO push_configs (task_id, config_id, body) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM tasks WHERE task_id = ?) "
                "ON CONFLICT (task_id, config_id) DO UPDATE SET body = excluded.body",
                (cfg.task_id, cfg.id, _body(cfg), cfg.task_id),
            ).rowcount
            if stored != 1:
                raise KeyError(cfg.task_id)

        await self._run(self._settled, run)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        def run() -> PushConfig | None:
            row = self._db().execute("SELECT body FROM push_configs WHERE task_id = ? AND config_id = ?",
                                     (task_id, config_id)).fetchone()
            if row is None:
                return None
            return self.records.load("push_configs", f"{task_id}/{config_id}", row[0], PushConfig.from_dict)

        return await self._run(self._settled, run)

    async def list_push_configs(self, task_id: str) -> list[PushConfig]:
        def run() -> list[PushConfig]:
            rows = self._db().execute("SELECT config_id, body FROM push_configs WHERE task_id = ? ORDER BY rowid",
                                      (task_id,))
            return kept(((f"{task_id}/{config_id}", body) for config_id, body in rows), "push_configs",
                        self.records, PushConfig.from_dict)

        return await self._run(self._settled, run)

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        def run() -> bool:
            return self._db().execute("DELETE FROM push_configs WHERE task_id = ? AND config_id = ?",
                                      (task_id, config_id)).rowcount == 1

        return await self._run(self._settled, run)
