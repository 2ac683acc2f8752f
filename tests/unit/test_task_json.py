"""The SQLite store's task bodies: put together from kept pieces, the same JSON as
encoding the task whole, through a task's whole life."""

import json
import math
from dataclasses import replace

from cleveragents.domain.task import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from cleveragents.infra.store.records import parse
from cleveragents.infra.store.task_json import TaskBodies

S = TaskState


def whole(task):
    return json.dumps(task.to_dict(), separators=(",", ":"))


def same_json(text, task):
    """The same JSON as encoding the task whole, its keys in the same order."""
    def read(t):
        return json.loads(t, object_pairs_hook=list)
    return read(text) == read(whole(task))


def message(n, text):
    return Message(f"m{n}", Role.USER if n % 2 == 0 else Role.AGENT, (Part.of_text(text),), "ctx", "t",
                   {"n": n, "é": [1.5, None, True]})


def test_every_write_of_a_task_is_the_same_json_as_encoding_it_whole():
    bodies = TaskBodies()
    task = Task("t\u00e9\n", "ctx\"", TaskStatus(S.SUBMITTED, "2026-01-01T00:00:00Z"), (message(0, "hi ✓"),),
                metadata={"k": "v"})
    steps = [
        lambda t: t.transition(S.WORKING, "2026-01-01T00:00:01Z"),  # only a status
        lambda t: t.with_artifact(Artifact("a", (Part.of_text("part 1"),), name="response")),
        lambda t: t.with_artifact(Artifact("a", (Part.of_text("part 2"),)), append=True),  # replaces artifact a
        lambda t: t.with_artifact(Artifact("b", (Part.of_data({"x": [1, 2]}),))),
        lambda t: t.answered(message(1, "which one?"), S.INPUT_REQUIRED, "2026-01-01T00:00:02Z", message(1, "q")),
        lambda t: t.with_message(message(2, "this one")).transition(S.WORKING, "2026-01-01T00:00:03Z"),
        lambda t: replace(t, history=t.history[1:]),  # a shorter history shifts every piece
        lambda t: t.answered(message(3, "done"), S.COMPLETED, "2026-01-01T00:00:04Z"),
    ]
    assert same_json(bodies.body(task), task)
    for step in steps:
        task = step(task)
        assert same_json(bodies.body(task), task)
        assert Task.from_dict(json.loads(bodies.body(task))) == task


def test_what_only_the_standard_encoder_writes_is_still_written():
    odd = {"nan": float("nan"), "big": 10**30, "surrogate": "\ud800"}
    task = Task("t", "ctx", TaskStatus(S.WORKING), metadata=odd)
    text = TaskBodies().body(task)
    assert same_json(text, task) and text == whole(task)
    assert json.loads(text)["metadata"]["big"] == 10**30
    read = parse(text)["metadata"]  # as the stores read it back
    assert read["surrogate"] == "\ud800" and read["big"] == 10**30 and math.isnan(read["nan"])


def test_only_live_tasks_are_kept_and_no_more_than_the_bound():
    bodies = TaskBodies(kept=2)
    tasks = [Task(f"t{n}", "ctx", TaskStatus(S.WORKING), (message(n, "x"),)) for n in range(3)]
    for task in tasks:
        bodies.body(task)
    assert list(bodies._live) == ["t1", "t2"]
    bodies.body(tasks[1].transition(S.COMPLETED, "2026-01-01T00:00:00Z"))
    assert list(bodies._live) == ["t2"]
