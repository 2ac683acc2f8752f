"""One task-store contract for every store: the SQLite file, the in-memory store and PostgreSQL."""

import random
import re
import sqlite3
from dataclasses import replace

import pytest

from cleveragents.domain.errors import ValidationError
from cleveragents.domain.task import (
    TERMINAL_STATES,
    Artifact,
    Message,
    Part,
    PushConfig,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from cleveragents.infra.store.memory import _SortedList
from cleveragents.infra.store.sqlite import DB_FILENAME, SqliteStore
from cleveragents.infra.store.sqlite_tasks import (
    OLDEST_TERMINAL_SQL,
    count_query,
    list_query,
)
from tests.store_kinds import STORE_KINDS
from tests.store_kinds import open_store as open_kind

S = TaskState


def stamp(second: int) -> str:
    return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}.000Z"


def make_task(task_id, context_id="ctx", state=S.SUBMITTED, second=0, **kw):
    return Task(task_id, context_id, TaskStatus(state, stamp(second)), **kw)


def finished(task, state=S.COMPLETED, second=0):
    return replace(task, status=TaskStatus(state, stamp(second)))


@pytest.fixture(params=STORE_KINDS)
async def open_store(request, tmp_path):
    opened = []

    def open_(terminal_cap=10_000):
        store = open_kind(request.param, request, tmp_path / f"state{len(opened)}", terminal_cap=terminal_cap)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        await store.close()


@pytest.fixture
def store(open_store):
    return open_store()


async def read_all(store, limit, **filters):
    """Every page of a listing, following the cursor."""
    seen, before = [], None
    while page := await store.list_tasks(**filters, limit=limit, before=before):
        seen += [task.id for _, task in page]
        before = page[-1][0]
    return seen


async def test_round_trip_keeps_history_artifacts_bytes_and_data(store):
    question = Message("m1", Role.USER, (Part.of_text("hi"), Part.of_data(None)), "ctx", "t1")
    answer = Message("m2", Role.AGENT, (Part.of_data({"rows": [1, 2]}, metadata={"k": "v"}),),
                     "ctx", "t1", {"seen": True}, ("ext:a",), ("t0",))
    artifact = Artifact("a1", (Part(raw=b"\x00\xffbinary", media_type="application/octet-stream",
                                    filename="blob.bin"),
                               Part(url="https://example.com/f.txt"), Part.of_data([1, "two"])),
                        name="out", description="result", metadata={"n": 1}, extensions=("ext:b",))
    task = make_task("t1", history=(question, answer), artifacts=(artifact,), metadata={"usage": {"in": 3}})

    assert await store.add_task(task) is True
    assert await store.add_task(make_task("t1", state=S.WORKING)) is False
    assert await store.get_task("t1") == task
    assert (await store.get_task("t1")).artifacts[0].parts[0].raw == b"\x00\xffbinary"

    working = task.transition(S.WORKING, stamp(5), answer)
    await store.save_task(working)
    assert await store.get_task("t1") == working
    assert await store.get_task("missing") is None
    with pytest.raises(KeyError):
        await store.save_task(make_task("missing"))


async def test_pages_are_newest_first_without_gaps_while_tasks_arrive(store):
    for i in range(12):
        await store.add_task(make_task(f"t{i:02d}", "a" if i % 3 else "b"))
    assert await read_all(store, 100) == [f"t{i:02d}" for i in reversed(range(12))]
    for round_, filters in enumerate(({}, {"context_id": "a"}, {"states": [S.SUBMITTED]})):
        expected = await read_all(store, 100, **filters)
        seen, before = [], None
        while page := await store.list_tasks(**filters, limit=5, before=before):
            seen += [task.id for _, task in page]
            before = page[-1][0]
            # A newer matching task lands between two page reads: later pages don't show it.
            await store.add_task(make_task(f"new-{round_}-{len(seen)}", "a"))
        assert seen == expected and len(expected) >= 8
    first = await store.list_tasks(limit=3)
    assert first[0][1].id.startswith("new-")
    assert [pos for pos, _ in first] == sorted((pos for pos, _ in first), reverse=True)


def matches(task, context_id=None, states=None, after=None):
    return ((context_id is None or task.context_id == context_id)
            and (states is None or task.state in states)
            and (after is None or task.status.timestamp > after))


FILTERS = [
    {},
    {"context_id": "c1"},
    {"context_id": "nobody"},
    {"states": [S.COMPLETED]},
    {"states": [S.COMPLETED, S.FAILED, S.COMPLETED]},
    {"states": [S.WORKING, S.INPUT_REQUIRED, S.CANCELED]},
    {"states": []},
    {"context_id": "c2", "states": [S.WORKING, S.COMPLETED]},
    {"status_after": stamp(20)},
    {"status_after": stamp(20), "states": [S.WORKING]},
    {"status_after": stamp(20), "context_id": "c0"},
]


async def test_filters_match_a_reference_in_listing_and_counting(store):
    states = [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.COMPLETED, S.FAILED, S.CANCELED]
    tasks = []
    for i in range(36):
        task = make_task(f"t{i:02d}", f"c{i % 3}", second=i)
        await store.add_task(task)
        if (state := states[i % len(states)]) is not S.SUBMITTED:
            task = finished(task, state, second=(i * 7) % 40)
            await store.save_task(task)
        tasks.append(task)
    newest_first = list(reversed(tasks))
    for filters in FILTERS:
        after = filters.get("status_after")
        expected = [t.id for t in newest_first
                    if matches(t, filters.get("context_id"), filters.get("states"), after)]
        assert await read_all(store, 4, **filters) == expected, filters
        assert await store.count_tasks(**filters) == len(expected), filters
    assert await store.count_tasks() == 36


async def test_status_after_compares_instants_not_text(store):
    await store.add_task(Task("half", "c", TaskStatus(S.WORKING, "2026-01-01T00:00:00.500Z")))
    await store.add_task(Task("none", "c", TaskStatus(S.WORKING, None)))
    for later_than in ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00"):
        assert [t.id for _, t in await store.list_tasks(status_after=later_than, limit=5)] == ["half"]
        assert await store.count_tasks(status_after=later_than) == 1
    assert await store.count_tasks(status_after="2026-01-01T00:00:00.500Z") == 0
    # The last two are valid ISO 8601 whose instants fall outside what Python's dates hold.
    for not_an_instant in ("yesterday", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        with pytest.raises(ValidationError) as refused:
            await store.list_tasks(status_after=not_an_instant, limit=5)
        assert refused.value.data["errors"][0]["loc"] == ["status_after"]
    with pytest.raises(ValidationError):
        await store.count_tasks(status_after="yesterday")


async def test_eviction_drops_the_earliest_terminal_keeps_live_and_push_configs_go_along(open_store):
    store = open_store(terminal_cap=5)
    for i in range(10):
        await store.add_task(make_task(f"t{i}", "even" if i % 2 == 0 else "odd"))
        await store.put_push_config(PushConfig(f"p{i}", f"t{i}", "https://hook.example/x"))
    terminal_order = [7, 2, 9, 0, 4, 6]  # not the creation order
    for second, i in enumerate(terminal_order):
        await store.save_task(finished(make_task(f"t{i}", "even" if i % 2 == 0 else "odd"), second=second))
    # Saving a terminal task again (e.g. its metadata) doesn't move it in the terminal order.
    await store.save_task(replace(finished(make_task("t2", "even")), metadata={"touched": True}))

    assert await store.get_task("t7") is None
    assert await store.list_push_configs("t7") == []
    assert await store.get_push_config("t7", "p7") is None
    kept_terminal = {f"t{i}" for i in terminal_order[1:]}
    assert {t.id for _, t in await store.list_tasks(states=TERMINAL_STATES, limit=50)} == kept_terminal
    assert {t.id for t in await store.live_tasks()} == {"t1", "t3", "t5", "t8"}
    assert await store.count_tasks() == 9
    assert await store.count_tasks(states=TERMINAL_STATES) == 5
    assert await store.count_tasks(context_id="odd") == 4  # t1, t3, t5, t9
    assert [c.id for c in await store.list_push_configs("t9")] == ["p9"]

    # A task stored already terminal counts too: the next earliest (t2) goes.
    await store.add_task(make_task("late", "odd", S.FAILED))
    assert await store.get_task("t2") is None and await store.get_task("late") is not None
    assert await store.count_tasks(context_id="even") == 4  # t0, t4, t6 and the live t8
    assert (await store.check())["tasks"] == 9


async def test_a_context_disappears_from_the_counts_when_its_tasks_are_evicted(open_store):
    store = open_store(terminal_cap=1)
    await store.add_task(make_task("a", "gone", S.COMPLETED))
    await store.add_task(make_task("b", "kept", S.COMPLETED))
    assert await store.count_tasks(context_id="gone") == 0
    assert await store.count_tasks(context_id="gone", states=[S.COMPLETED]) == 0
    assert await store.list_tasks(context_id="gone", limit=5) == []
    assert await store.count_tasks() == 1


async def test_live_tasks_are_the_unfinished_ones_oldest_first(store):
    for i, state in enumerate([S.WORKING, S.COMPLETED, S.INPUT_REQUIRED, S.SUBMITTED, S.CANCELED, S.AUTH_REQUIRED]):
        await store.add_task(make_task(f"t{i}", state=state))
    assert [t.id for t in await store.live_tasks()] == ["t0", "t2", "t3", "t5"]


async def test_push_config_crud_and_idempotent_delete(store):
    await store.add_task(make_task("t"))
    first = PushConfig("p1", "t", "https://a.example/hook", "tok", {"schemes": ["Bearer"]}, {"m": 1})
    await store.put_push_config(first)
    await store.put_push_config(PushConfig("p2", "t", "https://b.example/hook"))
    moved = replace(first, url="https://c.example/hook", token=None)
    await store.put_push_config(moved)  # replaces in place
    assert await store.get_push_config("t", "p1") == moved
    assert [c.id for c in await store.list_push_configs("t")] == ["p1", "p2"]
    assert await store.delete_push_config("t", "p1") is True
    assert await store.delete_push_config("t", "p1") is False
    assert await store.delete_push_config("other", "p1") is False
    assert await store.get_push_config("t", "p1") is None
    assert [c.id for c in await store.list_push_configs("t")] == ["p2"]
    with pytest.raises(KeyError):
        await store.put_push_config(PushConfig("p", "no-such-task", "https://a.example"))


async def test_a_random_history_matches_a_reference_model(open_store):
    cap = 12
    store = open_store(terminal_cap=cap)
    rng = random.Random(7)
    tasks: dict[str, Task] = {}
    terminal_order: list[str] = []
    created: list[str] = []
    for step in range(250):
        live = [t for t in tasks.values() if not t.terminal]
        if live and rng.random() < 0.5:
            task = rng.choice(live)
            state = rng.choice([S.WORKING, S.INPUT_REQUIRED, S.COMPLETED, S.FAILED, S.CANCELED])
            task = finished(task, state, second=step)
            await store.save_task(task)
        else:
            task = make_task(f"t{step:03d}", f"c{rng.randrange(4)}", rng.choice([S.SUBMITTED, S.REJECTED]),
                             second=step)
            assert await store.add_task(task)
            created.append(task.id)
        tasks[task.id] = task
        if task.terminal:
            terminal_order.append(task.id)
            while len(terminal_order) > cap:
                del tasks[terminal_order.pop(0)]
    newest_first = [tasks[task_id] for task_id in reversed(created) if task_id in tasks]
    for filters in FILTERS + [{"states": TERMINAL_STATES}, {"context_id": "c3", "states": [S.REJECTED]}]:
        after = filters.get("status_after")
        expected = [t.id for t in newest_first
                    if matches(t, filters.get("context_id"), filters.get("states"), after)]
        assert await read_all(store, 7, **filters) == expected, filters
        assert await store.count_tasks(**filters) == len(expected), filters
    assert [t.id for t in await store.live_tasks()] == [t.id for t in reversed(newest_first) if not t.terminal]


def test_the_sorted_list_behaves_like_a_sorted_python_list():
    rng = random.Random(3)
    items, reference = _SortedList(), []
    for _ in range(6000):  # enough to split chunks and empty some of them again
        if reference and rng.random() < 0.4:
            value = rng.choice(reference)
            items.remove(value)
            reference.remove(value)
        else:
            value = rng.randrange(3000)
            items.add(value)
            reference.append(value)
        reference.sort()
    assert len(items) == len(reference)
    for bound in (None, -1, 0, 1500, 2999, 5000):
        assert list(items.below(bound)) == [v for v in reversed(reference) if bound is None or v < bound]
        assert list(items.above(bound)) == [v for v in reference if bound is None or v > bound]


async def test_sqlite_keeps_tasks_across_a_restart(tmp_path):
    store = SqliteStore.open_in(tmp_path, terminal_cap=2)
    for name in ("old", "mid", "new"):
        await store.add_task(make_task(name, "c"))
    await store.put_push_config(PushConfig("p", "mid", "https://a.example"))
    await store.save_task(finished(make_task("old", "c")))
    await store.save_task(finished(make_task("mid", "c"), S.FAILED))
    with sqlite3.connect(tmp_path / DB_FILENAME) as raw:  # committed, visible to another process
        assert raw.execute("SELECT state FROM tasks WHERE task_id = 'mid'").fetchone() == ("failed",)
    await store.close()

    again = SqliteStore.open_in(tmp_path, terminal_cap=2)
    try:
        assert (await again.get_task("mid")).state is S.FAILED
        assert [c.id for c in await again.list_push_configs("mid")] == ["p"]
        assert [t.id for _, t in await again.list_tasks(limit=10)] == ["new", "mid", "old"]
        assert await again.count_tasks(states=[S.COMPLETED, S.FAILED]) == 2
        await again.save_task(finished(make_task("new", "c")))  # the terminal order survived too
        assert await again.get_task("old") is None and await again.get_task("mid") is not None
        assert await again.count_tasks() == 2 and (await again.check())["tasks"] == 2
    finally:
        await again.close()


async def plan_of(store, sql, args):
    rows = await store._run(lambda: store._db().execute(f"EXPLAIN QUERY PLAN {sql}", args).fetchall())
    return [row[3] for row in rows]


def reads_tasks_by_index_only(plan):
    touching = [step for step in plan if re.search(r"\btasks\b", step)]
    return touching and all(step.startswith("SEARCH tasks USING") for step in touching) and not any(
        "TEMP B-TREE" in step for step in plan)


async def test_sqlite_listing_and_counting_walk_indexes_without_sorting(tmp_path):
    store = SqliteStore.open_in(tmp_path)
    try:
        pages = {
            "plain": list_query(None, None, None, 50, None),
            "plain, later page": list_query(None, None, None, 50, 1000),
            "context": list_query("ctx", None, None, 50, None),
            "context and states": list_query("ctx", ["completed", "working"], None, 50, 7),
            "state": list_query(None, ["completed"], None, 50, None),
            "states": list_query(None, ["canceled", "completed", "failed"], None, 50, 9),
        }
        for name, (sql, args) in pages.items():
            plan = await plan_of(store, sql, args)
            assert reads_tasks_by_index_only(plan), (name, plan)
        eviction = await plan_of(store, OLDEST_TERMINAL_SQL, (3,))
        assert reads_tasks_by_index_only(eviction) and "terminal_seq" in eviction[0], eviction
        for context_id, states in ((None, None), ("ctx", None), (None, ["completed"]), ("ctx", ["failed"])):
            plan = await plan_of(store, *count_query(context_id, states, None))
            assert not any(re.search(r"\btasks\b", step) for step in plan), plan  # counters only
        plan = await plan_of(store, *count_query(None, None, "2026-01-01T00:00:00+00:00"))
        assert plan == ["SEARCH tasks USING COVERING INDEX tasks_by_status_at (status_at>?)"]
    finally:
        await store.close()


async def test_deleting_a_context_removes_its_tasks_counts_and_push_configs_only(store):
    for i, (context_id, state) in enumerate([("gone", S.COMPLETED), ("gone", S.INPUT_REQUIRED), ("kept", S.FAILED)]):
        await store.add_task(make_task(f"t{i}", context_id, state, second=i))
        await store.put_push_config(PushConfig(f"p{i}", f"t{i}", "https://hook.example/x"))
    assert await store.delete_context("gone") == 2
    assert await store.delete_context("gone") == 0
    assert await read_all(store, 10) == ["t2"] and await read_all(store, 10, context_id="gone") == []
    assert await store.count_tasks(context_id="gone") == 0 and await store.count_tasks() == 1
    assert await store.get_task("t0") is None and await store.list_push_configs("t0") == []
    assert [c.id for c in await store.list_push_configs("t2")] == ["p2"]
    await store.add_task(make_task("t0", "gone"))  # the id is free again
    assert await store.count_tasks(context_id="gone") == 1


async def test_a_page_read_under_a_budget_ends_after_the_task_that_passes_it(store):
    """A page of 100 tasks of 15 MiB each is 1.5 GB to read: a budget on what a page holds
    ends it early, after the task that passed it (so a page holds at least one), and
    says so; the next page goes on from there."""
    from cleveragents.domain.page_budget import PageBudget

    note = "n" * 10_000
    for i in range(6):
        await store.add_task(make_task(f"t{i}", "big", metadata={"note": note}))
    budget = PageBudget(25_000)
    first = await store.list_tasks(context_id="big", limit=6, budget=budget)
    assert [t.id for _, t in first] == ["t5", "t4", "t3"] and budget.ended_early
    budget = PageBudget(25_000)
    rest = await store.list_tasks(context_id="big", limit=6, before=first[-1][0], budget=budget)
    assert [t.id for _, t in rest] == ["t2", "t1", "t0"]
    budget = PageBudget(10**9)
    assert len(await store.list_tasks(context_id="big", limit=6, budget=budget)) == 6 and not budget.ended_early
    budget = PageBudget(1)
    assert [t.id for _, t in await store.list_tasks(context_id="big", limit=6, budget=budget)] == ["t5"]
