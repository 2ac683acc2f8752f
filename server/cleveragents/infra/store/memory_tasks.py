"""Tasks and push configs in the in-memory store, with the same contract as SQLite's.

Tasks get the same indexes as in SQLite (creation order overall, per context, per
state, by status timestamp; terminal order for eviction), so listing, counting and
eviction cost the same here as there.
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_left, bisect_right, insort
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cleveragents.domain.errors import UnreadableRecordError
from cleveragents.domain.page_budget import PageBudget
from cleveragents.domain.task import INTERRUPTED_STATES, PushConfig, Task, TaskState
from cleveragents.infra.store._memory import MemoryRepository
from cleveragents.infra.store.records import RecordReader
from cleveragents.infra.store.sqlite_tasks import (
    DEFAULT_TERMINAL_CAP,
    LIVE_STATES,
    after_instant,
    checked_terminal_cap,
    status_instant,
)
from cleveragents.infra.store.task_json import dumps

_CHUNK = 512


class _SortedList:
    """Sorted items in chunks of at most ``2 * _CHUNK``: an insert or a removal moves
    O(chunk) items instead of O(n), and a walk starts at any bound in O(log n)."""

    __slots__ = ("_chunks", "_len", "_maxes")

    def __init__(self) -> None:
        self._chunks: list[list[Any]] = []
        self._maxes: list[Any] = []
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def add(self, item: Any) -> None:
        self._len += 1
        if not self._chunks:
            self._chunks.append([item])
            self._maxes.append(item)
            return
        if item > self._maxes[-1]:  # the usual case: ids and timestamps only grow
            i = len(self._chunks) - 1
            chunk = self._chunks[i]
            chunk.append(item)
            self._maxes[i] = item
        else:
            i = min(bisect_left(self._maxes, item), len(self._chunks) - 1)
            chunk = self._chunks[i]
            insort(chunk, item)
            self._maxes[i] = chunk[-1]
        if len(chunk) > 2 * _CHUNK:
            self._chunks[i:i + 1] = [chunk[:_CHUNK], chunk[_CHUNK:]]
            self._maxes.insert(i, chunk[_CHUNK - 1])

    def remove(self, item: Any) -> None:
        i = bisect_left(self._maxes, item)
        chunk = self._chunks[i]
        del chunk[bisect_left(chunk, item)]
        self._len -= 1
        if chunk:
            self._maxes[i] = chunk[-1]
        else:
            del self._chunks[i], self._maxes[i]

    def below(self, bound: Any | None) -> Iterator[Any]:
        """Items less than ``bound`` (all when None), largest first."""
        i = len(self._chunks) if bound is None else bisect_left(self._maxes, bound)
        if i < len(self._chunks):
            chunk = self._chunks[i]
            for j in range(bisect_left(chunk, bound) - 1, -1, -1):
                yield chunk[j]
        for chunk in reversed(self._chunks[:i]):
            yield from reversed(chunk)

    def above(self, bound: Any | None) -> Iterator[Any]:
        """Items greater than ``bound`` (all when None), smallest first."""
        i = 0 if bound is None else bisect_right(self._maxes, bound)
        if i < len(self._chunks):
            chunk = self._chunks[i]
            for j in range(0 if bound is None else bisect_right(chunk, bound), len(chunk)):
                yield chunk[j]
        for chunk in self._chunks[i + 1:]:
            yield from chunk


_Key = tuple[str, TaskState, str | None]  # what the secondary indexes file a task under


@dataclass(slots=True)
class _Row:
    seq: int
    task: Task
    instant: str | None  # the status timestamp as status_instant() stores it
    checked: Task | None = None  # the version of `task` that `problem` is about
    problem: str | None = None  # why `checked` can't be served
    sized: Task | None = None  # the version of `task` that `size` is about
    size: int = 0  # characters of its JSON, as SQLite would store it (for page budgets)

    @property
    def key(self) -> _Key:
        return self.task.context_id, self.task.state, self.instant


class MemoryTasks(MemoryRepository):
    """Tasks, with the same contract as ``SqliteTasks`` (and its indexes)."""

    def __init__(self, check_open: Callable[[], None], records: RecordReader, *,
                 terminal_cap: int = DEFAULT_TERMINAL_CAP) -> None:
        super().__init__(check_open, records)
        self._terminal_cap = checked_terminal_cap(terminal_cap)
        self._task_seq = itertools.count(1)
        self._rows: dict[int, _Row] = {}
        self._seq_of: dict[str, int] = {}
        self._all = _SortedList()
        self._by_context: dict[str, _SortedList] = {}
        self._by_state = {state: _SortedList() for state in TaskState}
        self._by_instant = _SortedList()  # (instant, seq) of tasks with a timestamp
        self._context_counts: dict[tuple[str, TaskState], int] = {}
        self._waiting: dict[str, _SortedList] = {}  # per context, the tasks waiting for input
        self._terminal: OrderedDict[int, None] = OrderedDict()  # earliest terminal first
        # Called with the id of each evicted task (its push configs go with it).
        self.evicted: Callable[[str], object] = _ignore

    @property
    def stored(self) -> int:
        """How many tasks are stored (for the health check)."""
        return len(self._rows)

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._seq_of

    # -- task indexes --------------------------------------------------------------
    def _place(self, seq: int, key: _Key) -> None:
        context_id, state, instant = key
        if (in_context := self._by_context.get(context_id)) is None:  # not setdefault: no list made per call
            in_context = self._by_context[context_id] = _SortedList()
        in_context.add(seq)
        self._by_state[state].add(seq)
        if instant is not None:
            self._by_instant.add((instant, seq))
        self._count(context_id, state, +1)
        self._wait(context_id, state, seq, +1)

    def _unplace(self, seq: int, key: _Key) -> None:
        context_id, state, instant = key
        in_context = self._by_context[context_id]
        in_context.remove(seq)
        if not in_context:  # so the index shrinks with the tasks when contexts are evicted
            del self._by_context[context_id]
        self._by_state[state].remove(seq)
        if instant is not None:
            self._by_instant.remove((instant, seq))
        self._count(context_id, state, -1)
        self._wait(context_id, state, seq, -1)

    def _count(self, context_id: str, state: TaskState, change: int) -> None:
        key = (context_id, state)
        if (left := self._context_counts.pop(key, 0) + change) > 0:  # no zero entries kept
            self._context_counts[key] = left

    def _wait(self, context_id: str, state: TaskState, seq: int, change: int) -> None:
        """File a task in, or out of, its context's waiting tasks (only if it waits)."""
        if state not in INTERRUPTED_STATES:
            return
        if change > 0:
            if (waiting := self._waiting.get(context_id)) is None:
                waiting = self._waiting[context_id] = _SortedList()
            waiting.add(seq)
            return
        waiting = self._waiting[context_id]
        waiting.remove(seq)
        if not waiting:
            del self._waiting[context_id]

    def _refile(self, seq: int, old: _Key, new: _Key) -> None:
        """Move a saved task in just the indexes its change touches (usually its state
        and timestamp; a task keeps its context)."""
        if old[0] != new[0]:
            self._unplace(seq, old)
            self._place(seq, new)
            return
        context_id, old_state, old_instant = old
        _, state, instant = new
        if state is not old_state:
            self._by_state[old_state].remove(seq)
            self._by_state[state].add(seq)
            self._count(context_id, old_state, -1)
            self._count(context_id, state, +1)
            self._wait(context_id, old_state, seq, -1)
            self._wait(context_id, state, seq, +1)
        if instant != old_instant:
            if old_instant is not None:
                self._by_instant.remove((old_instant, seq))
            if instant is not None:
                self._by_instant.add((instant, seq))

    def _drop(self, row: _Row) -> None:
        self._unplace(row.seq, row.key)
        self._all.remove(row.seq)
        del self._rows[row.seq], self._seq_of[row.task.id]
        self.evicted(row.task.id)

    def _became_terminal(self, seq: int) -> None:
        """Record the terminal order, then evict the earliest beyond the cap."""
        self._terminal[seq] = None
        while len(self._terminal) > self._terminal_cap:
            oldest, _ = self._terminal.popitem(last=False)
            self._drop(self._rows[oldest])

    def _matching(self, seqs: Iterable[int], states: list[TaskState] | None,
                  after: str | None) -> Iterator[int]:
        for seq in seqs:
            row = self._rows[seq]
            if ((states is None or row.task.state in states)
                    and (after is None or (row.instant is not None and row.instant > after))):
                yield seq

    def _in_context(self, context_id: str, before: int | None) -> Iterator[int]:
        in_context = self._by_context.get(context_id)
        return in_context.below(before) if in_context else iter(())

    def _later(self, after: str) -> Iterator[int]:
        """Seqs of tasks whose status is later than ``after``, in timestamp order."""
        return (seq for _, seq in self._by_instant.above((after, math.inf)))

    def _problem(self, row: _Row) -> str | None:
        """Why the row's task can't be served, or None; checked once per version (tasks
        are immutable), when the task is first read."""
        if row.checked is not row.task:
            row.problem = self.records.problem("tasks", row.task.id, row.task.to_dict)
            row.checked = row.task
        return row.problem

    def _size(self, row: _Row) -> int:
        """Characters of the row's task as stored JSON; measured once per version."""
        if row.sized is not row.task:
            row.size, row.sized = len(dumps(row.task.to_dict())), row.task
        return row.size

    def _servable(self, seq: int) -> bool:
        return self._problem(self._rows[seq]) is None

    def _newest(self, context_id: str | None, states: list[TaskState] | None,
                after: str | None, limit: int, before: int | None) -> Iterable[int]:
        """Seqs newest first, through the same index SQLite walks for these filters,
        without the tasks that can't be served."""
        keep = self._servable
        if context_id is not None:
            return filter(keep, self._matching(self._in_context(context_id, before), states, after))
        if after is not None:
            later = (seq for seq in self._later(after) if before is None or seq < before)
            return heapq.nlargest(limit, filter(keep, self._matching(later, states, None)))
        if states is not None:
            return filter(keep, heapq.merge(*(self._by_state[state].below(before) for state in states), reverse=True))
        return filter(keep, self._all.below(before))

    # -- tasks ---------------------------------------------------------------------
    async def add_task(self, task: Task) -> bool:
        self._check_open()
        if task.id in self._seq_of:
            return False
        row = _Row(next(self._task_seq), task, status_instant(task.status.timestamp))
        self._rows[row.seq] = row
        self._seq_of[task.id] = row.seq
        self._all.add(row.seq)
        self._place(row.seq, row.key)
        if task.terminal:
            self._became_terminal(row.seq)
        return True

    async def save_task(self, task: Task) -> None:
        self._check_open()
        row = self._rows[self._seq_of[task.id]]
        was_terminal, old_key = row.task.terminal, row.key
        row.task, row.instant = task, status_instant(task.status.timestamp)
        if (key := row.key) != old_key:
            self._refile(row.seq, old_key, key)
        if was_terminal and not task.terminal:
            del self._terminal[row.seq]
        elif task.terminal and not was_terminal:
            self._became_terminal(row.seq)

    async def delete_context(self, context_id: str) -> int:
        self._check_open()
        seqs = list(self._in_context(context_id, None))
        for seq in seqs:
            self._terminal.pop(seq, None)
            self._drop(self._rows[seq])  # its push configs go with it
        return len(seqs)

    async def get_task(self, task_id: str) -> Task | None:
        self._check_open()
        seq = self._seq_of.get(task_id)
        if seq is None:
            return None
        row = self._rows[seq]
        if (problem := self._problem(row)) is not None:
            raise UnreadableRecordError("tasks", task_id, problem)
        return row.task

    async def list_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None, limit: int, before: int | None = None, budget: PageBudget | None = None,
    ) -> list[tuple[int, Task]]:
        self._check_open()
        wanted = _distinct(states)
        after = None if status_after is None else after_instant(status_after)
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        if limit == 0 or wanted == []:
            return []
        seqs = itertools.islice(self._newest(context_id, wanted, after, limit, before), limit)
        if budget is None:
            return [(seq, self._rows[seq].task) for seq in seqs]
        found = []
        for seq in seqs:
            found.append((seq, self._rows[seq].task))
            if not budget.spend(self._size(self._rows[seq])):
                budget.ended_early = next(seqs, None) is not None
                break
        return found

    async def count_tasks(
        self, *, context_id: str | None = None, states: Collection[TaskState] | None = None,
        status_after: str | None = None,
    ) -> int:
        self._check_open()
        wanted = _distinct(states)
        if status_after is not None:
            after = after_instant(status_after)
            if context_id is not None:
                return sum(1 for _ in self._matching(self._in_context(context_id, None), wanted, after))
            return sum(1 for _ in self._matching(self._later(after), wanted, None))
        if context_id is not None:
            if wanted is None:
                in_context = self._by_context.get(context_id)
                return len(in_context) if in_context else 0
            return sum(self._context_counts.get((context_id, state), 0) for state in wanted)
        if wanted is None:
            return len(self._rows)
        return sum(len(self._by_state[state]) for state in wanted)

    async def live_tasks(self) -> list[Task]:
        self._check_open()
        seqs = heapq.merge(*(self._by_state[state].above(None) for state in LIVE_STATES))
        return [self._rows[seq].task for seq in seqs if self._servable(seq)]

    async def waiting_task(self, context_id: str) -> Task | None:
        self._check_open()
        waiting = self._waiting.get(context_id)
        seq = next(filter(self._servable, waiting.below(None)), None) if waiting else None
        return None if seq is None else self._rows[seq].task



class MemoryPushConfigs(MemoryRepository):
    """Push configs, with the same contract as ``SqlitePushConfigs``: only for a stored
    task, and gone with it."""

    def __init__(self, check_open: Callable[[], None], records: RecordReader, tasks: MemoryTasks) -> None:
        super().__init__(check_open, records)
        self._tasks = tasks
        self._push: dict[str, dict[str, PushConfig]] = {}
        tasks.evicted = self._forget

    def _forget(self, task_id: str) -> None:
        self._push.pop(task_id, None)

    async def put_push_config(self, cfg: PushConfig) -> None:
        self._check_open()
        if cfg.task_id not in self._tasks:
            raise KeyError(cfg.task_id)
        self._push.setdefault(cfg.task_id, {})[cfg.id] = cfg

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        self._check_open()
        config = self._push.get(task_id, {}).get(config_id)
        if config is not None:
            self.records.require("push_configs", f"{task_id}/{config_id}", config.to_dict)
        return config

    async def list_push_configs(self, task_id: str) -> list[PushConfig]:
        self._check_open()
        return [config for config_id, config in self._push.get(task_id, {}).items()
                if self.records.problem("push_configs", f"{task_id}/{config_id}", config.to_dict) is None]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        self._check_open()
        configs = self._push.get(task_id, {})
        if configs.pop(config_id, None) is None:
            return False
        if not configs:
            del self._push[task_id]
        return True


def _ignore(task_id: str) -> None:
    pass


def _distinct(states: Collection[TaskState] | None) -> list[TaskState] | None:
    return None if states is None else sorted({TaskState(state) for state in states}, key=lambda s: s.value)
