"""Task.trimmed: the last ``historyLength`` messages of a task, for every length."""

import pytest

from cleveragents.domain.task import Message, Part, Role, Task, TaskState, TaskStatus


def task_with(count: int) -> Task:
    history = tuple(Message(f"m{n}", Role.USER, (Part.of_text(str(n)),)) for n in range(count))
    return Task("t", "c", TaskStatus(TaskState.WORKING), history)


@pytest.mark.parametrize("length", range(0, 10))
def test_history_length_keeps_the_last_messages_up_to_all_of_them(length):
    trimmed = task_with(4).trimmed(length)
    kept = min(length, 4)
    assert [m.message_id for m in trimmed.history] == ["m0", "m1", "m2", "m3"][4 - kept:]


def test_no_history_length_keeps_the_whole_history():
    task = task_with(3)
    assert task.trimmed(None) is task
