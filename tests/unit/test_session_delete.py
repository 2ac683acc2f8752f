"""session.delete over the real container: the session goes with its conversation,
and not while a task of it still runs."""

import asyncio

import pytest

from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.actor import TextChunk
from cleveragents.domain.errors import BusinessRuleViolation, ResourceNotFoundError
from cleveragents.domain.task import Message, Part, Role
from cleveragents.ids import new_id


class WaitingActor:
    """Answers at once, unless the message says "wait": then only once released."""

    name = "test/waiting"

    def __init__(self):
        self.release = asyncio.Event()

    async def respond(self, turn):
        if turn.message.text() == "wait":
            await self.release.wait()
        yield TextChunk("done")


@pytest.fixture(params=["memory", "sqlite"])
async def container(request, tmp_path):
    built = Container(Settings(workspace=tmp_path, memory=request.param == "memory"), actor=WaitingActor())
    yield built
    await built.aclose()


def message(context_id, text):
    return Message(new_id(), Role.USER, (Part.of_text(text),), context_id)


async def test_a_running_task_holds_the_session_until_it_ends(container):
    session_id = (await container.session_service.create()).session.session_id
    await container.task_service.send(message(session_id, "hello"))
    running = await container.task_service.send(message(session_id, "wait"), blocking=False)
    with pytest.raises(BusinessRuleViolation) as refused:
        await container.session_service.delete(session_id)
    assert refused.value.data == {"session_id": session_id, "running": 1}
    assert (await container.session_service.get(session_id)).session_id == session_id  # nothing removed
    await container.task_service.cancel(running.id)
    for _ in range(100):
        try:
            deleted = await container.session_service.delete(session_id)
            break
        except BusinessRuleViolation:
            await asyncio.sleep(0.02)
    assert deleted == {"session_id": session_id, "deleted": True, "tasks_deleted": 2}
    with pytest.raises(ResourceNotFoundError):
        await container.session_service.get(session_id)
    with pytest.raises(ResourceNotFoundError):
        await container.session_service.delete(session_id)
