"""ProtoJSON's other spelling: 1.0 requests that name fields as the proto does
(``task_id``, ``history_length``, ``push_notification_config``) mean the same as with
lowerCamel names, over HTTP JSON-RPC, HTTP+JSON and stdio. Answers are lowerCamel."""

from __future__ import annotations

import pytest

from cleveragents import A2A, Agent
from tests.e2e.rawclient import RawServer
from tests.e2e.test_http_conformance import AUTH, TOKEN, V1
from tests.e2e.test_http_sdk import handler
from tests.e2e.test_http_server import rpc, serving

HOOK = "http://127.0.0.1:9/a2a-hook"  # its network is allowed below: no name resolves here


def snake_message(text: str) -> dict:
    return {"message": {"role": "ROLE_USER", "message_id": f"m-{text}", "parts": [
        {"text": text, "media_type": "text/plain", "metadata": {"kept_as": "sent"}}]}}


@pytest.fixture
async def client(tmp_path):
    app = A2A(agent=Agent(name="Echo", handler=handler), auth_token=TOKEN).asgi_app(
        workspace=tmp_path, memory=True, push_allowed_networks=("127.0.0.1/32",))
    async with serving(app) as (_, http):
        http.headers.update({**AUTH, **V1})
        yield http


async def test_json_rpc_takes_proto_names_in_every_request(client):
    sent = (await client.post("/a2a", json=rpc("SendMessage", {
        **snake_message("hello"), "configuration": {"history_length": 0, "return_immediately": False}})))
    task = sent.json()["result"]["task"]
    assert "history" not in task or task["history"] == []  # history_length: 0
    part = (await client.post("/a2a", json=rpc("GetTask", {"id": task["id"]}))).json()["result"]["history"][0]["parts"][0]
    assert part["mediaType"] == "text/plain" and part["metadata"] == {"kept_as": "sent"}  # lowerCamel out

    got = (await client.post("/a2a", json=rpc("GetTask", {"id": task["id"], "history_length": 0}))).json()
    assert "history" not in got["result"] or got["result"]["history"] == [], got
    listed = (await client.post("/a2a", json=rpc("ListTasks", {"context_id": task["contextId"], "page_size": 1,
                                                               "include_artifacts": True}))).json()
    assert [t["id"] for t in listed["result"]["tasks"]] == [task["id"]], listed

    created = (await client.post("/a2a", json=rpc("CreateTaskPushNotificationConfig", {
        "task_id": task["id"], "url": HOOK, "token": "t0k"}))).json()
    assert created["result"]["taskId"] == task["id"] and "task_id" not in created["result"], created
    config_id = created["result"]["id"]
    fetched = (await client.post("/a2a", json=rpc("GetTaskPushNotificationConfig", {
        "task_id": task["id"], "id": config_id}))).json()
    assert fetched["result"]["url"] == HOOK, fetched
    configs = (await client.post("/a2a", json=rpc("ListTaskPushNotificationConfigs", {
        "task_id": task["id"], "page_size": 5}))).json()
    assert [c["id"] for c in configs["result"]["configs"]] == [config_id], configs
    deleted = (await client.post("/a2a", json=rpc("DeleteTaskPushNotificationConfig", {
        "task_id": task["id"], "id": config_id}))).json()
    assert "error" not in deleted, deleted


async def test_a_field_under_both_names_with_two_values_is_refused(client):
    answer = (await client.post("/a2a", json=rpc("GetTask", {"id": "x", "history_length": 0,
                                                             "historyLength": 2}))).json()
    assert answer["error"]["code"] == -32602, answer


async def test_http_json_takes_proto_names_in_bodies_and_queries(client):
    sent = await client.post("/message:send", json={**snake_message("rest"),
                                                   "configuration": {"history_length": 0}})
    assert sent.status_code == 200, sent.text
    task = sent.json()["task"]
    assert not task.get("history")
    got = await client.get(f"/tasks/{task['id']}", params={"history_length": 0})
    assert got.status_code == 200 and not got.json().get("history"), got.text
    full = await client.get(f"/tasks/{task['id']}")
    assert len(full.json()["history"]) >= 1
    listed = await client.get("/tasks", params={"context_id": task["contextId"], "include_artifacts": "true"})
    assert listed.status_code == 200 and [t["id"] for t in listed.json()["tasks"]] == [task["id"]], listed.text
    created = await client.post(f"/tasks/{task['id']}/pushNotificationConfigs",
                                json={"task_id": task["id"], "url": HOOK})
    assert created.status_code == 200 and created.json()["taskId"] == task["id"], created.text


async def test_stdio_takes_proto_names(workspace):
    server = await RawServer.start("--workspace", str(workspace), "--memory")
    try:
        await server.initialize()
        sent = await server.request(1, "SendMessage", {**snake_message("stdio"), "A2A-Version": "1.0"})
        task = sent["result"]["task"]
        got = await server.request(2, "GetTask", {"id": task["id"], "history_length": 0, "A2A-Version": "1.0"})
        assert not got["result"].get("history"), got
        full = await server.request(3, "GetTask", {"id": task["id"], "A2A-Version": "1.0"})
        assert full["result"]["history"][0]["messageId"] == "m-stdio", full
    finally:
        await server.kill()
