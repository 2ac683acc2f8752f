"""The contract: one list of cases, run unchanged through every transport.

Each case is ``async def case(runner)``; ``runner.call`` returns the wire response
(``{"result": ...}`` or ``{"error": {...}}``), ``runner.raw`` sends a raw body.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from cleveragents.ids import is_ulid

CASES: list[Any] = []


def case(fn: Any) -> Any:
    CASES.append(fn)
    return fn


def error_of(response: dict[str, Any] | None) -> dict[str, Any]:
    assert response is not None, "expected an error response, got none"
    assert "error" in response, f"expected an error, got {response}"
    return response["error"]


def result_of(response: dict[str, Any]) -> Any:
    assert "result" in response, f"expected a result, got {response}"
    return response["result"]


async def assert_alive(runner: Any) -> None:
    health = result_of(await runner.call("_cleveragents/health/check"))
    assert health["status"] == "ok"


# --- bad input -------------------------------------------------------------------
@case
async def malformed_json_is_a_parse_error(runner):
    for body in (b'{"jsonrpc": "2.0", "id": 1, "method": ', b"not json", b"{}}", b"\xff\xfe\x00"):
        response = await runner.raw(body)
        assert response["id"] is None
        assert error_of(response)["code"] == -32700
    await assert_alive(runner)


@case
async def bad_envelopes_are_invalid_requests(runner):
    bad = [
        ({"jsonrpc": "1.0", "id": 21, "method": "session.list"}, 21, "jsonrpc"),
        ({"id": 22, "method": "session.list"}, 22, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 23, "method": 5}, 23, "method"),
        ({"jsonrpc": "2.0", "id": 24, "method": "   "}, 24, "method"),
        ({"jsonrpc": "2.0", "id": 25}, 25, "method"),
        ({"jsonrpc": "2.0", "id": 26, "method": "session.list", "params": "x"}, 26, "params"),
        ({"jsonrpc": "2.0", "id": {"nested": 1}, "method": "session.list"}, None, "id"),
    ]
    for message, echoed, field in bad:
        response = await runner.raw(json.dumps(message).encode())
        assert response["id"] == echoed, message
        error = error_of(response)
        assert error["code"] == -32600, message
        assert error["data"]["field"] == field
    for body in (b"[]", b'[{"jsonrpc": "2.0", "id": 27, "method": "session.list"}]', b'"text"', b"42"):
        response = await runner.raw(body)
        assert response["id"] is None
        assert error_of(response)["code"] == -32600
    await assert_alive(runner)


@case
async def unknown_method_names_the_method(runner):
    error = error_of(await runner.call("no/such/method", {}))
    assert error["code"] == -32601
    assert error["data"] == {"method": "no/such/method"}
    await assert_alive(runner)


@case
async def invalid_params_say_where(runner):
    error = error_of(await runner.call("session.create", {"actor_name": "not an actor"}))
    assert error["code"] == -32602
    assert [e["loc"] for e in error["data"]["errors"]] == [["actor_name"]]

    error = error_of(await runner.call("session.close", {"sessionid": "x"}))
    assert error["code"] == -32602
    assert sorted(tuple(e["loc"]) for e in error["data"]["errors"]) == [("session_id",), ("sessionid",)]

    error = error_of(await runner.raw(b'{"jsonrpc":"2.0","id":31,"method":"session.list","params":[1,2]}'))
    assert error["code"] == -32602

    error = error_of(await runner.call("session.list", {"limit": 0}))
    assert error["code"] == -32602 and error["data"]["errors"][0]["loc"] == ["limit"]

    error = error_of(await runner.call("_cleveragents/event/subscribe", {"since": "not-a-ulid"}))
    assert error["code"] == -32602
    await assert_alive(runner)


@case
async def an_empty_params_array_is_no_params(runner):
    """Neovim's Lua encodes an empty table, `{}`, as `[]`: no parameter by position is
    read as no parameters at all, as if `params` were left out."""
    listed = result_of(await runner.raw(b'{"jsonrpc":"2.0","id":41,"method":"ListTasks","params":[]}'))
    assert listed == result_of(await runner.call("ListTasks", {}))
    health = result_of(await runner.raw(b'{"jsonrpc":"2.0","id":42,"method":"_cleveragents/health/check","params":[]}'))
    assert health["status"] == "ok"

    error = error_of(await runner.raw(b'{"jsonrpc":"2.0","id":43,"method":"SendMessage","params":[]}'))
    assert error["code"] == -32602 and "message" in json.dumps(error["data"]), error
    assert error == error_of(await runner.call("SendMessage", {}))
    error = error_of(await runner.raw(b'{"jsonrpc":"2.0","id":44,"method":"ListTasks","params":[{}]}'))
    assert error["code"] == -32602 and error["data"]["errors"][0]["loc"] == ["params"], error
    await assert_alive(runner)


@case
async def a_notification_gets_no_response(runner):
    body = json.dumps({"jsonrpc": "2.0", "method": "session.create", "params": {"session_id": "from-note"}})
    if runner.name == "facade":
        assert await runner.raw(body.encode()) is None
    else:
        await runner.notify_raw(body.encode())
    # It still ran (concurrently with what follows, so wait for it).
    for _ in range(100):
        response = await runner.call("session.get", {"session_id": "from-note"})
        if "result" in response:
            break
        await asyncio.sleep(0.02)
    assert result_of(response)["session_id"] == "from-note"


# --- sessions --------------------------------------------------------------------
@case
async def session_create_and_close(runner):
    created = result_of(await runner.call("session.create", {"actor_name": "openai/gpt-4o"}))
    assert created["status"] == "created"
    assert created["actor_name"] == "openai/gpt-4o"
    assert is_ulid(created["session_id"])
    session_id = created["session_id"]

    closed = result_of(await runner.call("session.close", {"session_id": session_id}))
    assert closed["status"] == "closed" and closed["session_id"] == session_id
    again = result_of(await runner.call("session.close", {"session_id": session_id}))
    assert again["closed_at"] == closed["closed_at"]
    assert result_of(await runner.call("session.get", {"session_id": session_id}))["status"] == "closed"

    missing = error_of(await runner.call("session.close", {"session_id": "no-such-session"}))
    assert missing["code"] == -32001
    assert missing["data"] == {"session_id": "no-such-session"}


@case
async def session_update_merges_metadata(runner):
    created = result_of(await runner.call("session.create", {"metadata": {"keep": 1, "drop": 2}}))
    session_id = created["session_id"]
    updated = result_of(await runner.call("session.update", {
        "session_id": session_id, "metadata": {"drop": None, "title": "first", "nested": {"a": [1, 2]}}}))
    assert updated["metadata"] == {"keep": 1, "title": "first", "nested": {"a": [1, 2]}}
    assert updated["updated_at"] >= updated["created_at"]
    assert result_of(await runner.call("session.get", {"session_id": session_id}))["metadata"] == updated["metadata"]

    budget = error_of(await runner.call("session.update", {"session_id": session_id,
                                                           "metadata": {"budget": {"max_tokens": 10**9}}}))
    assert budget["code"] == -32602 and budget["data"]["errors"][0]["loc"] == ["metadata", "budget"]
    missing = error_of(await runner.call("session.update", {"session_id": "no-such-session", "metadata": {}}))
    assert missing["code"] == -32001 and missing["data"] == {"session_id": "no-such-session"}


@case
async def session_defaults_to_the_local_actor(runner):
    created = result_of(await runner.call("session.create", {}))
    assert created["actor_name"] == "local/default"
    via_alias = result_of(await runner.call("session.create", {"actor": "ollama/llama3"}))
    assert via_alias["actor_name"] == "ollama/llama3"


@case
async def session_create_is_idempotent_with_an_id(runner):
    first = result_of(await runner.call("session.create", {"session_id": "editor-1", "actor_name": "local/default"}))
    second = result_of(await runner.call("session.create", {"session_id": "editor-1", "actor_name": "local/default"}))
    third = result_of(await runner.call("session.create", {"session_id": "editor-1"}))
    assert first["status"] == "created"
    assert second["status"] == third["status"] == "active"
    assert first["session_id"] == second["session_id"] == "editor-1"
    assert first["created_at"] == second["created_at"]
    listed = result_of(await runner.call("session.list", {}))
    assert [s["session_id"] for s in listed["sessions"]].count("editor-1") == 1

    conflict = error_of(await runner.call("session.create", {"session_id": "editor-1", "actor_name": "openai/gpt-4o"}))
    assert conflict["code"] == -32005
    assert conflict["data"]["actor_name"] == "local/default"


@case
async def session_list_pages_newest_first(runner):
    ids = [result_of(await runner.call("session.create", {}))["session_id"] for _ in range(5)]
    page = result_of(await runner.call("session.list", {"limit": 2}))
    assert [s["session_id"] for s in page["sessions"]] == ids[::-1][:2]
    assert page["total"] == 5 and page["next_cursor"]
    seen = [s["session_id"] for s in page["sessions"]]
    while page["next_cursor"]:
        page = result_of(await runner.call("session.list", {"limit": 2, "cursor": page["next_cursor"]}))
        seen += [s["session_id"] for s in page["sessions"]]
    assert seen == ids[::-1]
    result_of(await runner.call("session.close", {"session_id": ids[0]}))
    closed = result_of(await runner.call("session.list", {"status": "closed"}))
    assert [s["session_id"] for s in closed["sessions"]] == [ids[0]]
    assert error_of(await runner.call("session.list", {"cursor": "bogus"}))["code"] == -32602


@case
async def sessions_survive_a_restart(runner):
    created = result_of(await runner.call("session.create", {"actor_name": "openai/gpt-4o", "metadata": {"editor": "vim"}}))
    closed = result_of(await runner.call("session.create", {}))
    result_of(await runner.call("session.close", {"session_id": closed["session_id"]}))
    await runner.restart()
    session = result_of(await runner.call("session.get", {"session_id": created["session_id"]}))
    assert session["actor_name"] == "openai/gpt-4o" and session["status"] == "active"
    assert session["metadata"] == {"editor": "vim"}
    assert result_of(await runner.call("session.get", {"session_id": closed["session_id"]}))["status"] == "closed"
    again = result_of(await runner.call("session.create", {"session_id": created["session_id"]}))
    assert again["status"] == "active"


@case
async def params_keep_their_keys_and_nesting(runner):
    # (Embedded JSON-RPC envelopes are checked with a raw client in tests/e2e: the
    # pygls-based test client itself would mangle them.)
    metadata = {"_meta": {"deep": {"id": 1}}, "from": "editor", "type_name": "t", "1": [1, {"a": None}]}
    created = result_of(await runner.call("session.create", {"metadata": metadata}))
    session = result_of(await runner.call("session.get", {"session_id": created["session_id"]}))
    assert session["metadata"] == metadata


# --- events ----------------------------------------------------------------------
@case
async def event_subscription_streams_and_resumes(runner):
    subscribed, stream = await runner.subscribe({})
    result = result_of(subscribed)
    assert result["live"] is True and result["replayed"] == 0 and result["gap"] is False

    session_id = result_of(await runner.call("session.create", {}))["session_id"]
    created = await stream.next()
    assert created["event_type"] == "SessionStatusUpdateEvent"
    assert created["data"]["session_id"] == session_id and created["data"]["status"] == "created"
    assert created["subscription_id"] == result["subscription_id"]
    assert is_ulid(created["event_id"]) and created["timestamp"].endswith("Z")

    result_of(await runner.call("session.close", {"session_id": session_id}))
    closed = await stream.next()
    assert closed["data"]["status"] == "closed" and closed["event_id"] > created["event_id"]

    # Resume after the first event: exactly the later one is replayed, then live ones.
    resumed, replay = await runner.subscribe({"since": created["event_id"]})
    assert result_of(resumed)["replayed"] == 1
    assert (await replay.next())["event_id"] == closed["event_id"]
    later = result_of(await runner.call("session.create", {}))["session_id"]
    assert (await replay.next())["data"]["session_id"] == later
    assert (await stream.next())["data"]["session_id"] == later

    done = result_of(await runner.call("_cleveragents/event/unsubscribe", {"subscription_id": result["subscription_id"]}))
    assert done["status"] == "closed"
    again = error_of(await runner.call("_cleveragents/event/unsubscribe", {"subscription_id": result["subscription_id"]}))
    assert again["code"] == -32001
    result_of(await runner.call("session.create", {}))
    assert (await replay.next())["event_type"] == "SessionStatusUpdateEvent"
    assert stream.pending() == 0


@case
async def event_subscription_filters_by_type(runner):
    subscribed, stream = await runner.subscribe({"event_types": ["TaskStatusUpdateEvent"]})
    result_of(subscribed)
    result_of(await runner.call("session.create", {}))
    await assert_alive(runner)
    assert stream.pending() == 0


@case
async def legacy_event_subscribe_alias_is_served(runner):
    result = result_of(await runner.call("event.subscribe", {}))
    assert is_ulid(result["subscription_id"])


# --- health, diagnostics ---------------------------------------------------------
@case
async def health_check_reports_version_uptime_and_store(runner):
    from cleveragents import __version__

    health = result_of(await runner.call("_cleveragents/health/check", {}))
    assert health["version"] == __version__
    assert health["uptime_seconds"] >= 0
    assert health["store"]["ok"] is True and health["store"]["backend"] == "sqlite"


@case
async def diagnostics_report_each_check(runner):
    report = result_of(await runner.call("_cleveragents/diagnostics/run", {}))
    by_name = {c["name"]: c for c in report["checks"]}
    assert set(by_name) == {"store", "workspace", "actors"}
    assert by_name["store"]["status"] == "ok" and by_name["store"]["report"]["journal_mode"] == "wal"
    assert by_name["workspace"]["status"] == "ok" and by_name["workspace"]["writable"] is True
    assert [a["actor_name"] for a in by_name["actors"]["actors"]] == ["local/default"]
    assert report["status"] in {"ok", "warning"}
    only = result_of(await runner.call("_cleveragents/diagnostics/run", {"checks": ["store"]}))
    assert [c["name"] for c in only["checks"]] == ["store"]
    assert error_of(await runner.call("_cleveragents/diagnostics/run", {"checks": ["disk"]}))["code"] == -32602


# --- methods whose service is not built yet ---------------------------------------
@case
async def missing_services_are_named(runner):
    error = error_of(await runner.call("_cleveragents/sync/status", {}))
    assert error["code"] == -32004
    assert error["data"] == {"method": "_cleveragents/sync/status", "service": "sync_service"}
    error = error_of(await runner.call("_cleveragents/namespace/list", {}))
    assert error["code"] == -32004 and error["data"]["service"] == "namespace_service"


# --- registries --------------------------------------------------------------------
@case
async def registries_list_the_workspace_the_default_actor_and_the_tools(runner):
    resources = result_of(await runner.call("_cleveragents/registry/resource/list", {"type_name": "workspace"}))
    assert [(r["name"], r["uri"]) for r in resources["resources"]] == [("workspace", runner.workspace.resolve().as_uri())]
    projects = result_of(await runner.call("_cleveragents/registry/project/list"))["projects"]
    assert [(p["path"], p["current"]) for p in projects] == [(str(runner.workspace.resolve()), True)]
    actors = result_of(await runner.call("_cleveragents/registry/actor/list"))["actors"]
    assert {"name": "local/default", "kind": "default", "default": True}.items() <= actors[0].items()
    assert "openai/<model>" in {a["name"] for a in actors if a["kind"] == "provider"}
    first = result_of(await runner.call("_cleveragents/registry/skill/list", {"limit": 1}))
    second = result_of(await runner.call("_cleveragents/registry/skill/list", {"limit": 1, "cursor": first["next_cursor"]}))
    assert first["skills"][0]["kind"] == "tool" and second["skills"][0] != first["skills"][0]
    assert error_of(await runner.call("_cleveragents/registry/skill/list", {"cursor": "x"}))["code"] == -32602


@case
async def standard_methods_validate_before_refusing(runner):
    error = error_of(await runner.call("GetTask", {}))
    assert error["code"] == -32602
    reasons = {d["@type"]: d for d in error["data"]}
    assert reasons["type.googleapis.com/google.rpc.ErrorInfo"]["reason"] == "INVALID_PARAMS"
    violations = reasons["type.googleapis.com/google.rpc.BadRequest"]["fieldViolations"]
    assert violations == [{"field": "id", "description": "Field required"}]


@case
async def a2a_versions_are_checked(runner):
    v1 = error_of(await runner.call("GetTask", {"id": "t", "A2A-Version": "2.0"}))
    assert v1["code"] == -32009 and v1["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    v03 = error_of(await runner.call("tasks/get", {"id": "t", "A2A-Version": "0.9"}))
    assert v03["code"] == -32009 and v03["data"]["supported"] == ["1.0", "0.3"]
    extension = error_of(await runner.call("session.list", {"A2A-Version": "7.1"}))
    assert extension["code"] == -32007
    # Patch numbers are ignored.
    assert "result" in await runner.call("session.list", {"A2A-Version": "1.0.1"})
    assert "result" in await runner.call("session.list", {"A2A-Version": "0.3.0"})
