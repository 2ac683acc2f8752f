"""A message of very many parts, from a client.

Every part is decoded, stored and encoded again, on the event loop: a SendMessage of
300,000 one-letter parts (about 4 MiB of JSON, well under the body and parse-cost
limits) held the loop for over a second, and the task it made is served to every
client that lists it. A message holds at most ``MAX_PARTS`` parts; past that it
is refused, before any part is decoded, with -32602 naming ``message.parts``.
"""

from __future__ import annotations

import time

import pytest

from cleveragents.domain.task import MAX_PARTS
from tests.in_process import in_process
from tests.security.test_bounded_input import INVALID_PARAMS, field_errors, v03_message, v1_message
from tests.security.test_dense_json import agent_answering

MANY = 300_000


@pytest.mark.parametrize("dialect", ["1.0", "0.3"])
async def test_a_message_of_too_many_parts_is_refused_before_its_parts_are_read(tmp_path, dialect):
    if dialect == "1.0":
        method, message, part = "SendMessage", v1_message(), {"text": "a"}
    else:
        method, message, part = "message/send", v03_message(), {"kind": "text", "text": "a"}
    async with in_process(tmp_path) as call:
        started = time.perf_counter()
        answer = await call(method, {"message": {**message, "parts": [part] * MANY}})
        took = time.perf_counter() - started
        assert "error" in answer, str(answer)[:300]
        assert answer["error"]["code"] == INVALID_PARAMS, answer["error"]
        (loc, msg), = field_errors(answer)
        assert loc == ["message", "parts"] and str(MAX_PARTS) in msg and str(MANY) in msg, (loc, msg)
        assert took < 0.5, f"refusing took {took:.2f} s: the parts were read"
        listed = await call("ListTasks" if dialect == "1.0" else "tasks/list", {})
        assert not (listed["result"].get("tasks")), listed  # nothing was stored

        at_most = await call(method, {"message": {**message, "parts": [part] * MAX_PARTS}})
        assert "result" in at_most, str(at_most)[:300]


async def test_a_remote_agent_answering_an_artifact_of_too_many_parts_is_refused():
    """A remote agent is untrusted too: an artifact of 300,000 parts in its answer is an
    invalid answer, read no further than its count."""
    import json

    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.errors import InvalidAgentResponseError

    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "a"}] * MANY}]}
    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": task}}).encode()
    async with agent_answering(answer) as url:
        async with A2AClient(ServerConnectionConfig(url=url, timeout_seconds=30)) as client:
            with pytest.raises(InvalidAgentResponseError) as caught:
                await client.send("hi")
    assert "task.artifacts.0.parts: List should have at most 10000 items" in str(caught.value), caught.value
    assert caught.value.data["errors"][0]["type"] == "too_long", caught.value.data
