"""A real a2a-sdk agent on 127.0.0.1 (a uvicorn server in a thread), for the remote
actor's tests: "ask" asks which colour and answers with it, "fail" fails, "reject"
rejects the task, "wait" works until cancelled, "flood" streams 1 MiB text chunks until
cancelled, anything else is echoed in two streamed artifact chunks."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette


async def start_work(context, event_queue) -> tuple[str, TaskUpdater]:
    """The user's text, and an updater on the (new or resumed) task, now working."""
    task = context.current_task
    if task is None:
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
    updater = TaskUpdater(event_queue, task.id, task.context_id)
    await updater.start_work()
    return context.get_user_input(), updater


class Executor(AgentExecutor):
    """"ask": asks which colour, then answers with it; "fail": fails; "reject": rejects;
    else streams."""

    async def execute(self, context, event_queue):
        text, updater = await start_work(context, event_queue)
        if text == "ask":
            await updater.requires_input(updater.new_agent_message([pb.Part(text="Which colour?")]))
            return
        if text == "wait":
            await updater.add_artifact([pb.Part(text="waiting")], artifact_id="out")
            await asyncio.Event().wait()  # until cancelled
        if text == "flood":
            chunk, append = "f" * (1024 * 1024), False
            while True:  # until cancelled
                await updater.add_artifact([pb.Part(text=chunk)], artifact_id="out", append=append)
                append = True
                await asyncio.sleep(0.005)
        if text == "fail":
            await updater.failed(updater.new_agent_message([pb.Part(text="no can do")]))
            return
        if text == "reject":
            await updater.reject(updater.new_agent_message([pb.Part(text="not my job")]))
            return
        await updater.add_artifact([pb.Part(text="remote: ")], artifact_id="out")
        await asyncio.sleep(0.01)
        await updater.add_artifact([pb.Part(text=text)], artifact_id="out", append=True, last_chunk=True)
        await updater.complete()

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def _app(base: str) -> Starlette:
    card = pb.AgentCard(
        name="remote", description="A remote agent", version="1.0.0",
        supported_interfaces=[pb.AgentInterface(url=base + "/a2a", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"], skills=[pb.AgentSkill(id="echo", name="Echo", description="Echo")])
    handler = DefaultRequestHandler(Executor(), InMemoryTaskStore(), card)
    return Starlette(routes=create_jsonrpc_routes(handler, "/a2a") + create_agent_card_routes(card))


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The agent's base URL while it runs."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(_app(base), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the a2a-sdk server did not start"
        time.sleep(0.02)
    yield base
    server.should_exit = True
    thread.join(10)
    sock.close()
