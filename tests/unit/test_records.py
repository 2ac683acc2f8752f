"""``domain.records.record``: a frozen dataclass with a faster ``__init__``."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from cleveragents.domain.records import record
from cleveragents.domain.task import Message, Part, Role


@record
class Point:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


@record
class Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")


def test_a_record_is_made_like_the_dataclass_it_is():
    assert Point(1) == Point(1, 0, []) == Point(x=1, tags=[]) and Point(1, 2) != Point(1, 3)
    assert repr(Point(1, 2, ["a"])) == "Point(x=1, y=2, tags=['a'])"
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags"]
    assert Point(1).tags is not Point(1).tags  # a factory's default is made per instance
    assert dataclasses.replace(Point(1, 2), y=5) == Point(1, 5)
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(Point(3, 4))) == Point(3, 4)
    assert not hasattr(Point(1), "__dict__")


def test_a_record_refuses_changes_and_wrong_arguments():
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, 2, [], 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]


def test_a_record_runs_its_post_init():
    assert Checked(1).n == 1
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)


def test_the_task_model_is_made_of_records():
    message = Message("m1", Role.USER, (Part("hi"),))
    assert message == Message(message_id="m1", role=Role.USER, parts=(Part(text="hi"),), context_id=None)
    assert message.in_task("t1", "c1") == dataclasses.replace(message, task_id="t1", context_id="c1")
