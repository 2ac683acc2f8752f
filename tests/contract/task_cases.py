"""Contract cases for agent tasks: the standard methods in both dialects, with the
default local actor."""

from __future__ import annotations

import asyncio
from typing import Any

from cleveragents.ids import is_ulid
from tests.contract.cases import case, error_of, result_of


def v1_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{text[:8]}", "parts": [{"text": text}], **extra}}


def v03_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"message": {"kind": "message", "role": "user", "messageId": f"m-{text[:8]}",
                        "parts": [{"kind": "text", "text": text}], **extra}}


@case
async def send_returns_the_finished_task_in_each_dialect(runner):
    task = result_of(await runner.call("SendMessage", v1_message("hello")))["task"]
    assert is_ulid(task["id"]) and is_ulid(task["contextId"])
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and task["status"]["timestamp"].endswith("Z")
    user, agent = task["history"]
    assert user == {"messageId": "m-hello", "role": "ROLE_USER", "parts": [{"text": "hello"}],
                    "contextId": task["contextId"], "taskId": task["id"]}
    assert agent["role"] == "ROLE_AGENT" and "No language model is configured" in agent["parts"][0]["text"]
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "response" and artifact["parts"] == agent["parts"]

    old = result_of(await runner.call("message/send", v03_message("fs.search hello")))
    assert old["kind"] == "task" and old["status"]["state"] == "completed"
    assert old["history"][0]["parts"] == [{"kind": "text", "text": "fs.search hello"}]
    reply = old["history"][1]["parts"][0]["text"]
    assert '"path": "README.md"' in reply and '"line": 1' in reply

    got = result_of(await runner.call("GetTask", {"id": task["id"], "historyLength": 1}))
    assert got["id"] == task["id"] and [m["role"] for m in got["history"]] == ["ROLE_AGENT"]
    got = result_of(await runner.call("tasks/get", {"id": old["id"], "historyLength": 0}))
    assert got["kind"] == "task" and "history" not in got


@case
async def task_errors_use_the_a2a_codes(runner):
    missing = error_of(await runner.call("GetTask", {"id": "no-such-task"}))
    assert missing["code"] == -32001 and missing["data"][0]["reason"] == "TASK_NOT_FOUND"
    assert error_of(await runner.call("tasks/get", {"id": "no-such-task"}))["code"] == -32001

    done = result_of(await runner.call("SendMessage", v1_message("hello")))["task"]
    refused = error_of(await runner.call("CancelTask", {"id": done["id"]}))
    assert refused["code"] == -32002 and refused["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    assert error_of(await runner.call("tasks/cancel", {"id": done["id"]}))["code"] == -32002
    still = result_of(await runner.call("GetTask", {"id": done["id"]}))
    assert still["status"] == done["status"]

    subscribe = error_of(await runner.call("SubscribeToTask", {"id": done["id"]}))
    assert subscribe["code"] == -32004 and subscribe["data"][0]["reason"] == "UNSUPPORTED_OPERATION"
    assert error_of(await runner.call("tasks/resubscribe", {"id": done["id"]}))["code"] == -32004

    no_parts = error_of(await runner.call("SendMessage", {"message": {"role": "ROLE_USER", "messageId": "m-empty", "parts": []}}))
    assert no_parts["code"] == -32602
    bad_part = error_of(await runner.call("message/send", {
        "message": {"role": "user", "messageId": "m-bad", "parts": [{"kind": "?"}]}}))
    assert bad_part["code"] == -32602 and bad_part["data"]["errors"][0]["loc"][:3] == ["message", "parts", 0]


@case
async def list_pages_newest_first_with_cursors(runner):
    ids = [result_of(await runner.call("SendMessage", v1_message(f"hello {i}")))["task"]["id"] for i in range(5)]
    seen, token, pages = [], None, 0
    while True:
        params: dict[str, Any] = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        page = result_of(await runner.call("ListTasks", params))
        pages += 1
        assert page["pageSize"] == 2 and page["totalSize"] == 5
        assert all("artifacts" not in t for t in page["tasks"])  # includeArtifacts defaults to false
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if token == "":
            break
    assert pages == 3 and seen == ids[::-1]
    context = result_of(await runner.call("GetTask", {"id": ids[0]}))["contextId"]
    only = result_of(await runner.call("ListTasks", {"contextId": context, "includeArtifacts": True}))
    assert [t["id"] for t in only["tasks"]] == [ids[0]] and only["tasks"][0]["artifacts"]
    done = result_of(await runner.call("tasks/list", {"status": "completed", "pageSize": 100}))
    assert done["totalSize"] == 5 and done["tasks"][0]["kind"] == "task"
    assert error_of(await runner.call("ListTasks", {"pageSize": 101}))["code"] == -32602
    assert error_of(await runner.call("ListTasks", {"pageToken": "not-a-token"}))["code"] == -32602


@case
async def return_immediately_answers_before_the_work_is_done(runner):
    sent = result_of(await runner.call("SendMessage", {**v1_message("hello"),
                                                      "configuration": {"returnImmediately": True}}))["task"]
    assert sent["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
    for _ in range(100):
        got = result_of(await runner.call("GetTask", {"id": sent["id"]}))
        if got["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.02)
    assert got["status"]["state"] == "TASK_STATE_COMPLETED" and len(got["history"]) == 2


@case
async def streams_send_each_item_then_answer_with_the_last(runner):
    response, items = await runner.stream("SendStreamingMessage", v1_message("hello"))
    final = result_of(response)
    kinds = [next(iter(k for k in p if k in {"task", "statusUpdate", "artifactUpdate", "message"})) for _, p in items]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert [m for m, _ in items] == ["task/statusUpdate", "task/statusUpdate", "task/artifactUpdate",
                                     "task/statusUpdate"]
    assert items[0][1]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert items[1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert items[2][1]["artifactUpdate"]["lastChunk"] is True
    assert final == {k: v for k, v in items[-1][1].items() if k not in ("requestId", "eventId")}
    # Each item is numbered, in order, so SubscribeToTask can resume after any of them.
    event_ids = [p["eventId"] for _, p in items]
    assert all(is_ulid(event_id) for event_id in event_ids)
    assert event_ids == sorted(set(event_ids))  # in order, none twice
    assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task_id = final["statusUpdate"]["taskId"]
    stored = result_of(await runner.call("GetTask", {"id": task_id}))
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED" and len(stored["history"]) == 2
    assert stored["artifacts"][0]["parts"] == items[2][1]["artifactUpdate"]["artifact"]["parts"]

    response, items = await runner.stream("message/stream", v03_message("hello"))
    last = result_of(response)
    assert [p.get("kind") for _, p in items] == ["task", "status-update", "artifact-update", "status-update"]
    assert last["kind"] == "status-update" and last["final"] is True and last["status"]["state"] == "completed"


@case
async def a_subscriber_resumes_after_the_last_event_it_saw(runner):
    _, streamed = await runner.stream("SendStreamingMessage", v1_message("hello"))
    task_id = streamed[0][1]["task"]["id"]

    def payload(items: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in p.items() if k != "requestId"} for _, p in items]

    # A client that saw the first two items of a stream that has since finished gets
    # the rest, with the same ids, and nothing twice.
    response, resumed = await runner.stream("SubscribeToTask", {"id": task_id, "lastEventId": streamed[1][1]["eventId"]})
    assert payload(resumed) == payload(streamed[2:])
    assert result_of(response)["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    # One that saw everything, or whose id this server can't place, gets the finished task.
    for last in (streamed[-1][1]["eventId"], f"{task_id}.1", "not-an-event", "tasks/3.x"):
        response, items = await runner.stream("SubscribeToTask", {"id": task_id, "lastEventId": last})
        assert [p["task"]["status"]["state"] for _, p in items] == ["TASK_STATE_COMPLETED"]
        assert result_of(response)["task"]["artifacts"] == result_of(await runner.call("GetTask", {"id": task_id}))["artifacts"]
    # Without an id a finished task is still an error, and the id must be a string.
    assert error_of(await runner.call("SubscribeToTask", {"id": task_id}))["code"] == -32004
    bad = error_of(await runner.call("SubscribeToTask", {"id": task_id, "lastEventId": 7}))
    assert bad["code"] == -32602 and "lastEventId" in str(bad["data"])
    # A blocking send is numbered by nobody: there is nothing to resume, only its end.
    sent = result_of(await runner.call("SendMessage", v1_message("hello")))["task"]
    _, items = await runner.stream("tasks/resubscribe", {"id": sent["id"], "lastEventId": f"{sent['id']}.0"})
    assert [p["kind"] for _, p in items] == ["task"] and items[0][1]["status"]["state"] == "completed"


@case
async def push_notification_configs_are_kept_per_task(runner):
    task = result_of(await runner.call("SendMessage", v1_message("hello")))["task"]
    # A public address (the task is done: nothing is ever sent to it).
    created = result_of(await runner.call("CreateTaskPushNotificationConfig", {
        "taskId": task["id"], "url": "http://93.184.215.14/hook", "token": "secret-1"}))
    assert created["taskId"] == task["id"] and created["url"] == "http://93.184.215.14/hook"
    config_id = created["id"]
    got = result_of(await runner.call("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": config_id}))
    assert got == created
    listed = result_of(await runner.call("ListTaskPushNotificationConfigs", {"taskId": task["id"]}))
    assert listed["configs"] == [created]
    old = result_of(await runner.call("tasks/pushNotificationConfig/list", {"id": task["id"]}))
    assert old[0]["taskId"] == task["id"] and old[0]["pushNotificationConfig"]["id"] == config_id
    assert result_of(await runner.call("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": config_id})) == {}
    again = await runner.call("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": config_id})
    assert result_of(again) == {}  # idempotent
    assert result_of(await runner.call("ListTaskPushNotificationConfigs", {"taskId": task["id"]}))["configs"] == []
    bad = error_of(await runner.call("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": "ftp://x"}))
    assert bad["code"] == -32602
    missing = error_of(await runner.call("CreateTaskPushNotificationConfig", {"taskId": "nope", "url": "http://x/"}))
    assert missing["code"] == -32001
    # The server's own loopback and a cloud metadata service are no webhooks.
    for url, reason in (("http://127.0.0.1:9/hook", "loopback"), ("http://169.254.169.254/latest/meta-data/", "metadata")):
        refused = error_of(await runner.call("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url}))
        assert refused["code"] == -32602 and refused["data"][0]["metadata"]["reason"] == reason, refused
        old_refused = error_of(await runner.call("tasks/pushNotificationConfig/set", {
            "taskId": task["id"], "pushNotificationConfig": {"url": url}}))
        assert old_refused["code"] == -32602 and old_refused["data"]["reason"] == reason, old_refused
    assert result_of(await runner.call("ListTaskPushNotificationConfigs", {"taskId": task["id"]}))["configs"] == []


@case
async def tasks_survive_a_restart(runner):
    task = result_of(await runner.call("SendMessage", v1_message("hello")))["task"]
    await runner.restart()
    got = result_of(await runner.call("GetTask", {"id": task["id"]}))
    assert got["history"] == task["history"] and got["status"] == task["status"]


@case
async def a_message_to_a_plans_context_answers_its_gate(runner):
    (runner.workspace / "a.py").write_text("x = foo\n")
    plan = result_of(await runner.call("_cleveragents/plan/use", {
        "action_name": "replace", "automation_profile": "manual",
        "arguments": {"pattern": "foo", "replacement": "bar", "glob": "*.py"}}))
    approved = result_of(await runner.call("message/send", v03_message("Approved, go ahead",
                                                                        contextId=plan["context_id"])))
    assert approved["id"] == plan["plan_id"] and approved["status"]["state"] == "input-required"
    assert (runner.workspace / "a.py").read_text() == "x = foo\n"
    applied = result_of(await runner.call("SendMessage", v1_message("Approved: apply", contextId=plan["context_id"])))
    assert applied["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (runner.workspace / "a.py").read_text() == "x = bar\n"

    other = result_of(await runner.call("_cleveragents/plan/use", {
        "action_name": "replace", "automation_profile": "manual",
        "arguments": {"pattern": "x", "replacement": "y", "glob": "*.py"}}))
    rejected = result_of(await runner.call("message/send", v03_message("no", taskId=other["plan_id"])))
    assert rejected["status"]["state"] == "canceled"
    status = result_of(await runner.call("_cleveragents/plan/status", {"plan_id": other["plan_id"]}))
    assert status["state"] == "cancelled"


@case
async def session_delete_removes_it_and_its_conversation(runner):
    session_id = result_of(await runner.call("session.create", {}))["session_id"]
    sent = result_of(await runner.call("SendMessage", v1_message("hello", contextId=session_id)))["task"]
    other = result_of(await runner.call("SendMessage", v1_message("elsewhere")))["task"]
    deleted = result_of(await runner.call("session.delete", {"session_id": session_id}))
    assert deleted == {"session_id": session_id, "deleted": True, "tasks_deleted": 1}
    assert error_of(await runner.call("session.get", {"session_id": session_id}))["code"] == -32001
    assert error_of(await runner.call("GetTask", {"id": sent["id"]}))["code"] == -32001
    assert result_of(await runner.call("ListTasks", {"contextId": session_id}))["tasks"] == []
    assert result_of(await runner.call("GetTask", {"id": other["id"]}))["id"] == other["id"]  # not its own: kept
    missing = error_of(await runner.call("session.delete", {"session_id": session_id}))
    assert missing["code"] == -32001 and missing["data"] == {"session_id": session_id}
