"""Actors through the real stdio server: a session on ``openai/<model>`` pointed at
the chat-completions double streams the model's text; a plan whose step asks the
actor for an edit goes execute -> diff -> apply; a session on ``a2a/<url>`` drives a
real a2a-sdk agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawclient import RawServer
from tests.fakes.a2a_agent import serving
from tests.fakes.openai_server import FakeOpenAI, Reply

PLAN = "_cleveragents/plan/"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    with FakeOpenAI() as server:
        # The server process reads these: the fake is the OpenAI-compatible endpoint.
        monkeypatch.setenv("CLEVERAGENTS_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-e2e")
        yield server


@pytest.fixture
async def server(workspace: Path, fake: FakeOpenAI):
    proc = await RawServer.start("--workspace", str(workspace), "--memory")
    await proc.initialize()
    yield proc
    await proc.kill()


class Calls:
    def __init__(self, server: RawServer):
        self.server, self.next_id = server, 100

    async def __call__(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        response = await self.server.request(self.next_id, method, params)
        assert "result" in response, (method, response)
        return response["result"]


async def test_a_session_on_an_openai_actor_streams_the_models_text(server, fake):
    fake.reply(Reply(text="Streaming through the fake model.", piece=5))
    call = Calls(server)
    session = await call("session.create", actor_name="openai/gpt-4o")
    assert session["actor_name"] == "openai/gpt-4o"
    message = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "say something"}],
               "contextId": session["session_id"]}
    final = await call("SendStreamingMessage", message=message)
    updates = [m["params"] for m in server.messages
               if m.get("method") == "task/artifactUpdate" and m["params"].get("requestId") == call.next_id]
    assert len(updates) > 3  # streamed in chunks, as they arrived
    assert {u["artifactUpdate"]["contextId"] for u in updates} == {session["session_id"]}
    text = "".join(p["text"] for u in updates for p in u["artifactUpdate"]["artifact"]["parts"])
    assert text == "Streaming through the fake model."
    assert "TASK_STATE_COMPLETED" in str(final)
    body = fake.requests[0]
    assert body["model"] == "gpt-4o" and body["stream"] is True
    assert fake.headers[0]["authorization"] == "Bearer sk-e2e"
    refused = await server.request(999, "session.create", {"actor_name": "nosuch/model"})
    assert refused["error"]["code"] == -32602 and "openai" in refused["error"]["message"]


async def test_a_plan_step_asks_the_actor_for_an_edit(server, fake, workspace):
    (workspace / "app.py").write_text("def greet():\n    return 'hi'\n")
    fake.reply(
        Reply(text="The greeting should be friendlier.", tool_calls=[{"name": "fs__replace", "arguments": {
            "pattern": "'hi'", "replacement": "'hello there'", "glob": "app.py"}}]),
        Reply(text="Made the greeting friendlier."))
    call = Calls(server)
    session = await call("session.create", actor_name="openai/gpt-4o-mini")
    plan = await call(PLAN + "use", action_name="edit", session_id=session["session_id"],
                      arguments={"instruction": "Make the greeting friendlier", "glob": "*.py"})
    executed = await call(PLAN + "execute", plan_id=plan["plan_id"])
    assert (executed["phase"], executed["state"]) == ("execute", "input-required")
    assert "def greet()" in fake.requests[0]["messages"][0]["content"]  # the file was shown
    diff = await call(PLAN + "diff", plan_id=plan["plan_id"])
    assert "-    return 'hi'" in diff["diff"] and "+    return 'hello there'" in diff["diff"]
    assert (workspace / "app.py").read_text().endswith("'hi'\n")  # nothing written before apply
    tree = await call(PLAN + "tree", plan_id=plan["plan_id"])
    [child] = tree["roots"][0]["children"]
    assert child["tool"] == "fs.replace" and child["rationale"] == "The greeting should be friendlier."
    assert (child["kind"], child["outcome"], child["writes"]) == ("tool_call", "succeeded", 1)
    applied = await call(PLAN + "apply", plan_id=plan["plan_id"])
    assert applied["state"] == "completed"
    assert (workspace / "app.py").read_text() == "def greet():\n    return 'hello there'\n"


async def test_a_session_on_a_remote_a2a_agent(server):
    call = Calls(server)
    with serving() as url:
        session = await call("session.create", actor_name=f"a2a/{url}")
        message = {"role": "ROLE_USER", "messageId": "r1", "parts": [{"text": "ask"}],
                   "contextId": session["session_id"]}
        asked = (await call("SendStreamingMessage", message=message))
        assert "Which colour?" in str(asked) and "TASK_STATE_INPUT_REQUIRED" in str(asked)
        task_id = next(m["params"]["statusUpdate"]["taskId"] for m in server.messages
                       if m.get("method") == "task/statusUpdate" and "statusUpdate" in m["params"])
        answer = {**message, "messageId": "r2", "parts": [{"text": "green"}], "taskId": task_id}
        done = (await call("SendMessage", message=answer))["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for a in done["artifacts"] for p in a["parts"]) == "remote: green"
