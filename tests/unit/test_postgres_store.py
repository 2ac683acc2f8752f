"""What only the PostgreSQL store has to show, on a real server: versioned migrations run
once however many replicas start, the terminal-task cap holds exactly under concurrent
writers on separate pools, pages and counts read about a page whatever the table holds,
and what PostgreSQL can't store is refused clearly."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cleveragents.domain.errors import ValidationError
from cleveragents.domain.task import TERMINAL_STATES, Task, TaskState, TaskStatus

psycopg = pytest.importorskip("psycopg")

from cleveragents.infra.store.postgres import PostgresStore  # noqa: E402
from cleveragents.infra.store.postgres_schema import MIGRATIONS  # noqa: E402
from cleveragents.infra.store.postgres_tasks import count_query, list_query  # noqa: E402

S = TaskState


def make_task(task_id: str, context_id: str = "ctx", state: TaskState = S.SUBMITTED) -> Task:
    return Task(task_id, context_id, TaskStatus(state, "2026-01-01T00:00:00.000Z"))


@pytest.fixture
def url(postgres_url: str) -> str:
    return postgres_url


async def test_replicas_starting_together_apply_each_migration_once(url):
    stores = [PostgresStore(url) for _ in range(4)]
    try:
        await asyncio.gather(*(store.open() for store in stores))
        with psycopg.connect(url) as raw:
            versions = [row[0] for row in raw.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == list(range(1, len(MIGRATIONS) + 1))
        assert [(await store.check())["ok"] for store in stores] == [True] * 4
    finally:
        for store in stores:
            await store.close()


async def test_what_one_process_commits_another_reads_after_a_restart(url):
    first = await PostgresStore(url, terminal_cap=2).open()
    await first.add_task(make_task("a"))
    await first.save_task(make_task("a", state=S.COMPLETED))
    await first.close()
    with psycopg.connect(url) as raw:  # committed before the call returned
        assert raw.execute("SELECT state FROM tasks WHERE task_id = 'a'").fetchone() == ("completed",)
    again = await PostgresStore(url, terminal_cap=2).open()
    try:
        assert (await again.get_task("a")).state is S.COMPLETED
        assert await again.count_tasks(states=TERMINAL_STATES) == 1
    finally:
        await again.close()


async def test_a_newer_schema_is_refused(url):
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                    "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        raw.execute("INSERT INTO schema_migrations (version) VALUES (99)")
    store = PostgresStore(url)
    with pytest.raises(RuntimeError, match="newer than this version knows"):
        await store.open()
    await store.close()


async def test_an_unreachable_server_is_named_without_its_password():
    store = PostgresStore("postgresql://someone:hunter2@127.0.0.1:1/nothing")
    with pytest.raises(RuntimeError) as failed:
        await store.open()
    assert "127.0.0.1" in str(failed.value) and "hunter2" not in str(failed.value)
    await store.close()


async def test_the_cap_holds_exactly_under_concurrent_replicas(url):
    cap = 20
    replicas = [await PostgresStore(url, terminal_cap=cap, pool_size=4).open() for _ in range(3)]
    try:
        async def finish(n: int) -> None:
            store = replicas[n % len(replicas)]
            await store.add_task(make_task(f"t{n:03d}", f"c{n % 5}"))
            await store.save_task(make_task(f"t{n:03d}", f"c{n % 5}", S.COMPLETED))

        await asyncio.gather(*(finish(n) for n in range(120)))
        store = replicas[0]
        assert await store.count_tasks() == cap
        assert await store.count_tasks(states=TERMINAL_STATES) == cap
        assert sum([await store.count_tasks(context_id=f"c{i}") for i in range(5)]) == cap
        assert len(await store.list_tasks(limit=500)) == cap
        with psycopg.connect(url) as raw:
            rows = raw.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
            kept = raw.execute("SELECT MIN(terminal_seq), MAX(terminal_seq) FROM tasks").fetchone()
        assert rows == cap and kept[1] - kept[0] == cap - 1  # the latest terminal ones, no gap
    finally:
        for store in replicas:
            await store.close()


def _rows_read(plan: dict[str, Any]) -> int:
    """Rows the scans of ``tasks`` produced, across the plan."""
    own = plan.get("Actual Rows", 0) * plan.get("Actual Loops", 1) if plan.get("Relation Name") == "tasks" else 0
    return own + sum(_rows_read(child) for child in plan.get("Plans", []))


def _scans(plan: dict[str, Any]) -> list[str]:
    found = [plan["Node Type"]] if plan.get("Relation Name") == "tasks" else []
    return found + [scan for child in plan.get("Plans", []) for scan in _scans(child)]


async def test_pages_and_counts_read_about_a_page_of_a_large_table(url):
    store = await PostgresStore(url, terminal_cap=100_000).open()
    await store.close()
    states = ["submitted", "working", "completed", "failed", "canceled", "input-required"]
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute(
            "INSERT INTO tasks (task_id, context_id, state, status_at, terminal_seq, body) "
            "SELECT 't' || i, 'c' || (i %% 50), (%s::text[])[1 + i %% 6], now(), "
            "CASE WHEN i %% 6 BETWEEN 2 AND 4 THEN nextval('tasks_terminal_order') END, '{}' "
            "FROM generate_series(1, 12000) AS i", (states,))
        raw.execute("ANALYZE tasks")
        pages = {
            "plain": list_query(None, None, None, 50, None),
            "plain, later page": list_query(None, None, None, 50, 8000),
            "context": list_query("c7", None, None, 50, None),
            "context and states": list_query("c7", ["completed", "working"], None, 50, 10000),
            "state": list_query(None, ["completed"], None, 50, None),
            "states": list_query(None, ["canceled", "completed", "failed"], None, 50, 9000),
        }
        for name, (sql, args) in pages.items():
            plan = raw.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", args).fetchone()[0][0]["Plan"]
            assert "Seq Scan" not in _scans(plan), (name, json.dumps(plan)[:500])
            assert _rows_read(plan) <= 50 * 8, (name, _rows_read(plan))
        for context_id, chosen in ((None, None), ("c3", None), (None, ["completed"]), ("c3", ["failed"])):
            sql, args = count_query(context_id, chosen, None, mark="%s")
            plan = raw.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", args).fetchone()[0][0]["Plan"]
            assert _scans(plan) == [], plan  # counters only


async def test_text_postgresql_cant_hold_is_refused_with_a_clear_error(url):
    store = await PostgresStore(url).open()
    try:
        with pytest.raises(ValidationError) as refused:
            await store.add_task(make_task("t\x00", "ctx"))
        assert refused.value.data["reason"] == "nul_character"
        with pytest.raises(ValidationError):  # a terminal write is pipelined: the same answer
            await store.add_task(make_task("done", "c\x00", S.COMPLETED))
        assert await store.add_task(make_task("fine")) is True  # the pool goes on
    finally:
        await store.close()


async def test_a_replica_starting_up_repairs_only_the_tasks_of_replicas_that_are_gone(url):
    a = await PostgresStore(url).open()
    b = await PostgresStore(url).open()
    try:
        await a.add_task(make_task("run-by-a", state=S.WORKING))
        await b.add_task(make_task("run-by-b", state=S.WORKING))
        await b.add_task(make_task("old", state=S.WORKING))
        with psycopg.connect(url, autocommit=True) as raw:  # as written before migration 3
            raw.execute("UPDATE tasks SET runner = NULL WHERE task_id = 'old'")
        assert [t.id for t in await b.live_tasks()] == ["run-by-b", "old"]  # a's is a's to repair
        assert [t.id for t in await a.live_tasks()] == ["run-by-a", "old"]
        # a is killed: its database session ends, and with it the lock that showed it alive.
        with psycopg.connect(url, autocommit=True) as raw:
            pid = a._runner_conn.info.backend_pid
            raw.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(50):
            if "run-by-a" in [t.id for t in await b.live_tasks()]:
                break
            await asyncio.sleep(0.05)
        assert [t.id for t in await b.live_tasks()] == ["run-by-a", "run-by-b", "old"]
    finally:
        await a.close()
        await b.close()


async def test_a_replica_starting_up_interrupts_only_the_plans_of_replicas_that_are_gone(url):
    from cleveragents.domain.plan import State
    from tests.unit.test_plan_store import make_plan

    a = await PostgresStore(url).open()
    b = await PostgresStore(url).open()
    try:
        await a.add_plan(make_plan("on-a", state=State.RUNNING))
        await b.add_plan(make_plan("on-b", state=State.RUNNING))
        assert [p.plan_id for p in await b.plans_in_states([State.RUNNING])] == ["on-b"]
        with psycopg.connect(url, autocommit=True) as raw:  # a is killed
            raw.execute("SELECT pg_terminate_backend(%s)", (a._runner_conn.info.backend_pid,))
        for _ in range(50):
            if len(await b.plans_in_states([State.RUNNING])) == 2:
                break
            await asyncio.sleep(0.05)
        assert [p.plan_id for p in await b.plans_in_states([State.RUNNING])] == ["on-a", "on-b"]
    finally:
        await a.close()
        await b.close()
