"""Bounded input: no JSON value a client sends can poison what every client is served.

A free-form value nested 250 levels deep, or a metadata object of 300 KiB, is refused
with -32602 naming the field, in both A2A dialects and the extension methods, on stdio,
HTTP JSON-RPC and HTTP REST; JSON nested past what the parser takes is a parse error
that leaves the server serving. Records that can't be served (written behind the
server's back, by an older version or a bug) are skipped by every list, logged once,
reported by ``_cleveragents/diagnostics/run``, and refused with a clear error when read
alone. Every server here runs as root and as an unprivileged user.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.rawclient import RawServer
from tests.http_answers import jsonrpc_answer
from tests.in_process import in_process
from tests.security.identities import Identity
from tests.socket_buffers import in_flight_bytes

DEEP = 250  # the finding: 250 levels of metadata broke every list
LIMIT = 64  # the documented default: objects and arrays nest at most 64 levels in params
METADATA_LIMIT = 256 * 1024
TOKEN = "bounded-input-token"
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
RECORD_UNREADABLE = "RECORD_UNREADABLE"
NOT_FOUND = -32001
INVALID_PARAMS = -32602


def nest(levels: int, leaf: Any = None) -> Any:
    """``levels`` objects inside each other: nest(2) is {"a": {"a": None}}."""
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def nest_list(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def v1_message(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"role": "ROLE_USER", "messageId": f"m-{text}-{time.monotonic_ns()}", "parts": [{"text": text}], **extra}


def v03_message(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"kind": "message", "role": "user", "messageId": f"m03-{time.monotonic_ns()}",
            "parts": [{"kind": "text", "text": text}], **extra}


def field_errors(answer: dict[str, Any]) -> list[tuple[list[str], str]]:
    """(loc as strings, message) of each field error, in either data shape: the
    pydantic-style ``errors`` of 0.3 and the extensions, the BadRequest of 1.0."""
    data = answer["error"].get("data")
    if isinstance(data, list):
        bad = next(d for d in data if d.get("@type", "").endswith("google.rpc.BadRequest"))
        return [(v["field"].split("."), v["description"]) for v in bad["fieldViolations"]]
    return [([str(p) for p in e["loc"]], e["msg"]) for e in data["errors"]]


def assert_refused(answer: dict[str, Any], loc: list[str | int], what: str, *, too: str = "deep") -> None:
    assert "error" in answer, f"{what}: accepted: {str(answer)[:300]}"
    assert answer["error"]["code"] == INVALID_PARAMS, f"{what}: {str(answer)[:300]}"
    errors = field_errors(answer)
    prefix = [str(p) for p in loc]
    matching = [(got, msg) for got, msg in errors if got[:len(prefix)] == prefix]
    assert matching, f"{what}: no error at {prefix}: {errors}"
    got, msg = matching[0]
    if too == "deep":
        assert "deeper than" in msg and str(LIMIT) in msg, (what, msg)
        assert len(got) <= LIMIT, f"{what}: the location goes past the limit: {len(got)}"
    else:
        assert "larger than" in msg, (what, msg)


def assert_served(answer: dict[str, Any], what: str) -> dict[str, Any]:
    assert "result" in answer, f"{what}: {str(answer)[:400]}"
    return answer["result"]


# -- servers, as the identity --------------------------------------------------------
Call = Callable[[str, dict[str, Any]], Any]


class Stdio:
    """The stdio server as ``identity``, over a raw pipe; its stderr goes to a file."""

    def __init__(self, identity: Identity, workspace: Path, log: Path, *args: str):
        self.identity, self.workspace, self.log, self.args = identity, workspace, log, args
        self.ids = iter(range(1, 1_000_000))
        self.server: RawServer | None = None

    async def start(self) -> Stdio:
        with open(self.log, "ab") as stderr:
            proc = await asyncio.create_subprocess_exec(
                *self.identity.server_command(), "--workspace", str(self.workspace), *self.args,
                cwd=self.workspace, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
                limit=1 << 24, **self.identity.popen_options())
        self.server = RawServer(proc)
        await self.server.initialize()
        return self

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.server is not None
        return await self.server.request(next(self.ids), method, params)

    async def raw(self, body: bytes) -> dict[str, Any]:
        assert self.server is not None
        self.server.send_message(body)
        return await self.server.read_message()

    async def stop(self) -> None:
        assert self.server is not None
        await self.server.request(next(self.ids), "shutdown")
        self.server.send_message({"jsonrpc": "2.0", "method": "exit"})
        code, _, _ = await self.server.wait()
        assert code == 0, self.log.read_text(errors="replace")[-2000:]


class Http:
    """``python -m cleveragents.transports.http`` as ``identity``, with a token."""

    def __init__(self, identity: Identity, workspace: Path, log: Path, *args: str):
        self.identity, self.workspace, self.log, self.args = identity, workspace, log, args
        self.process: subprocess.Popen[bytes] | None = None
        self.client: httpx.AsyncClient | None = None
        self.ids = iter(range(1, 1_000_000))

    async def start(self) -> Http:
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as stderr:
            self.process = subprocess.Popen(
                [*self.identity.server_command("cleveragents.transports.http"), "--workspace", str(self.workspace),
                 "--host", "127.0.0.1", "--port", "0", "--auth-token", TOKEN, *self.args],
                cwd=self.workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                **self.identity.popen_options())
        deadline = time.monotonic() + 30
        while not (match := LISTENING.search(self.log.read_bytes()[offset:].decode(errors="replace"))):
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the HTTP server did not start: {self.log.read_text(errors='replace')[-2000:]}")
            await asyncio.sleep(0.02)
        self.client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{match.group(1)}", timeout=30,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        return self

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.client is not None
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        response = await self.client.post("/a2a", content=json.dumps(body))
        assert response.status_code == 200, (method, response.status_code, response.text[:300])
        return jsonrpc_answer(response)

    async def raw(self, body: bytes) -> dict[str, Any]:
        assert self.client is not None
        return jsonrpc_answer(await self.client.post("/a2a", content=body))

    async def rest(self, method: str, path: str, body: Any = None) -> httpx.Response:
        assert self.client is not None
        content = None if body is None else json.dumps(body)
        return await self.client.request(method, path, content=content,
                                         headers={"Content-Type": "application/a2a+json"})

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        assert self.process is not None
        self.process.terminate()
        try:
            code = self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(15)
        assert code == 0, self.log.read_text(errors="replace")[-2000:]


TRANSPORTS = {"stdio": Stdio, "http": Http}


@asynccontextmanager
async def serving(kind: str, identity: Identity, workspace: Path, log: Path, *args: str) -> AsyncIterator[Any]:
    server = await TRANSPORTS[kind](identity, workspace, log, *args).start()
    try:
        yield server
    finally:
        await server.stop()


def workspace_of(identity: Identity) -> Path:
    workspace = identity.directory("ws")
    (workspace / "notes.txt").write_text("hello\n")
    identity.own(workspace)
    return workspace


# -- the finding ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_deep_metadata_is_refused_and_lists_keep_answering_after_a_restart(identity, kind, tmp_path):
    workspace = workspace_of(identity)
    log = tmp_path / "server.log"
    async with serving(kind, identity, workspace, log) as server:
        good = assert_served(await server.call("SendMessage", {"message": v1_message("good")}), "SendMessage")
        deep = await server.call("SendMessage", {"message": v1_message("deep", metadata=nest(DEEP))})
        assert_refused(deep, ["message", "metadata", "a"], "SendMessage message.metadata")
        deep03 = await server.call("message/send", {"message": v03_message("deep", metadata=nest(DEEP))})
        assert_refused(deep03, ["message", "metadata", "a"], "message/send message.metadata")
        session = await server.call("session.create", {"metadata": nest(DEEP)})
        assert_refused(session, ["metadata", "a"], "session.create metadata")
        kept = assert_served(await server.call("session.create", {"metadata": {"team": "a"}}), "session.create")
        for _ in range(2):
            listed = assert_served(await server.call("ListTasks", {}), "ListTasks")
            assert [t["id"] for t in listed["tasks"]] == [good["task"]["id"]]
            assert_served(await server.call("tasks/list", {}), "tasks/list")
            sessions = assert_served(await server.call("session.list", {}), "session.list")
            assert [s["session_id"] for s in sessions["sessions"]] == [kept["session_id"]]
    async with serving(kind, identity, workspace, log) as server:  # the state is on disk: after a restart too
        listed = assert_served(await server.call("ListTasks", {}), "ListTasks after a restart")
        assert [t["id"] for t in listed["tasks"]] == [good["task"]["id"]]
        assert_served(await server.call("session.list", {}), "session.list after a restart")


async def test_rest_refuses_deep_metadata_with_the_field(identity, tmp_path):
    workspace = workspace_of(identity)
    async with serving("http", identity, workspace, tmp_path / "server.log") as server:
        response = await server.rest("POST", "/message:send", {"message": v1_message("deep", metadata=nest(DEEP))})
        assert response.status_code == 400, response.text[:300]
        error = response.json()["error"]
        assert error["status"] == "INVALID_ARGUMENT"
        bad = next(d for d in error["details"] if d["@type"].endswith("BadRequest"))
        assert bad["fieldViolations"][0]["field"].startswith("message.metadata.a.a")
        big = await server.rest("POST", "/message:send",
                                {"message": v1_message("big", metadata={"blob": "x" * (METADATA_LIMIT + 1)})})
        assert big.status_code == 400, big.text[:300]
        assert (await server.rest("GET", "/tasks")).status_code == 200


# -- every free-form value, every dialect -------------------------------------------------
def _free_form_cases(session_id: str) -> list[tuple[str, dict[str, Any], list[str | int], str]]:
    """(method, params, where the error must point, deep|large)."""
    push = {"url": "https://example.invalid/hook", "authentication": {"scheme": "Bearer", "extra": nest(DEEP)}}
    big = {"blob": "x" * (METADATA_LIMIT + 1)}
    return [
        ("SendMessage", {"message": v1_message(metadata=nest(DEEP))}, ["message", "metadata"], "deep"),
        ("SendMessage", {"message": v1_message(parts=[{"text": "x", "metadata": nest(DEEP)}])},
         ["message", "parts", 0, "metadata"], "deep"),
        ("SendMessage", {"message": v1_message(parts=[{"data": nest(DEEP)}])}, ["message", "parts", 0, "data"], "deep"),
        ("SendMessage", {"message": v1_message(parts=[{"data": nest_list(DEEP)}])},
         ["message", "parts", 0, "data"], "deep"),
        ("SendMessage", {"message": v1_message(), "metadata": nest(DEEP)}, ["metadata"], "deep"),
        ("SendMessage", {"message": v1_message(), "configuration": {"pushNotificationConfig": push}},
         ["configuration", "pushNotificationConfig", "authentication", "extra"], "deep"),
        ("SendMessage", {"message": v1_message(extensions=nest_list(DEEP))}, ["message", "extensions"], "deep"),
        ("SendMessage", {"message": v1_message(), "unknownMember": nest_list(DEEP)}, ["unknownMember"], "deep"),
        ("SendMessage", {"message": v1_message(metadata=big)}, ["message", "metadata"], "large"),
        ("SendMessage", {"message": v1_message(parts=[{"text": "x", "metadata": big}])},
         ["message", "parts", 0, "metadata"], "large"),
        ("SendMessage", {"message": v1_message(), "metadata": big}, ["metadata"], "large"),
        ("SendStreamingMessage", {"message": v1_message(metadata=nest(DEEP))}, ["message", "metadata"], "deep"),
        ("message/send", {"message": v03_message(metadata=nest(DEEP))}, ["message", "metadata"], "deep"),
        ("message/send", {"message": v03_message(parts=[{"kind": "data", "data": nest(DEEP)}])},
         ["message", "parts", 0, "data"], "deep"),
        ("message/send", {"message": v03_message(metadata=big)}, ["message", "metadata"], "large"),
        ("message/stream", {"message": v03_message(metadata=nest(DEEP))}, ["message", "metadata"], "deep"),
        ("CreateTaskPushNotificationConfig", {"taskId": "t", **push}, ["authentication", "extra"], "deep"),
        ("tasks/pushNotificationConfig/set", {"taskId": "t", "pushNotificationConfig": push},
         ["pushNotificationConfig", "authentication", "extra"], "deep"),
        ("GetTask", {"id": "t", "historyLength": nest_list(DEEP)}, ["historyLength"], "deep"),
        ("session.create", {"metadata": nest(DEEP)}, ["metadata"], "deep"),
        ("session.create", {"metadata": big}, ["metadata"], "large"),
        ("_cleveragents/plan/use", {"action_name": "replace", "arguments": {"pattern": nest(DEEP),
                                                                            "replacement": "b"}},
         ["arguments", "pattern"], "deep"),
        ("_cleveragents/plan/correct", {"plan_id": "01JEXAMPLE0000000000000000", "arguments": {"x": nest(DEEP)}},
         ["arguments", "x"], "deep"),
        ("_cleveragents/context/set", {"session_id": session_id, "key": "k", "value": nest(DEEP)}, ["value"], "deep"),
        ("_cleveragents/context/set", {"session_id": session_id, "key": "k", "value": nest_list(DEEP)},
         ["value"], "deep"),
        ("_cleveragents/event/subscribe", {"event_types": nest_list(DEEP)}, ["event_types"], "deep"),
        ("plan.create", {"action_name": "replace", "arguments": {"pattern": nest(DEEP), "replacement": "b"}},
         ["arguments", "pattern"], "deep"),
    ]


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_every_free_form_value_has_a_depth_and_size_limit(identity, kind, tmp_path):
    workspace = workspace_of(identity)
    async with serving(kind, identity, workspace, tmp_path / "server.log") as server:
        session_id = assert_served(await server.call("session.create", {}), "session.create")["session_id"]
        for method, params, loc, too in _free_form_cases(session_id):
            assert_refused(await server.call(method, params), loc, f"{method} {loc}", too=too)
        if kind == "http":  # on stdio the transport reads its progress token first (its own check)
            token = await server.call("_cleveragents/health/check", {"workDoneToken": nest(DEEP)})
            assert_refused(token, ["workDoneToken"], "workDoneToken")
        # Nothing was stored, and every list and read still answers.
        assert assert_served(await server.call("ListTasks", {}), "ListTasks")["tasks"] == []
        assert_served(await server.call("session.list", {}), "session.list")
        assert assert_served(await server.call("_cleveragents/plan/list", {}), "plan/list")["plans"] == []
        shown = assert_served(await server.call("_cleveragents/context/show", {"session_id": session_id}), "show")
        assert all(not tier["items"] for tier in shown["tiers"]), shown
        health = assert_served(await server.call("_cleveragents/diagnostics/run", {}), "diagnostics")
        assert health["status"] != "error", health


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_values_at_the_limits_are_kept_and_served_intact(identity, kind, tmp_path):
    """The limits refuse nothing a real agent sends: a metadata object 62 levels deep (its
    innermost object at level 64 of params) and one just under the size limit go
    through, are stored, and come back as sent, also after a restart."""
    workspace = workspace_of(identity)
    deepest = nest(LIMIT - 2, leaf="bottom")
    largest = {"blob": "é" * ((METADATA_LIMIT - 20) // 2)}  # UTF-8 bytes count, not characters
    log = tmp_path / "server.log"
    async with serving(kind, identity, workspace, log) as server:
        one_more = await server.call("SendMessage", {"message": v1_message(metadata=nest(LIMIT - 1))})
        assert_refused(one_more, ["message", "metadata"], "one level too many")
        sent = assert_served(await server.call("SendMessage", {"message": v1_message("deep", metadata=deepest)}),
                             "SendMessage at the depth limit")
        big = assert_served(await server.call("SendMessage", {"message": v1_message("big", metadata=largest)}),
                            "SendMessage at the size limit")
        data = assert_served(await server.call("SendMessage", {"message": v1_message(
            parts=[{"data": nest(LIMIT - 5, leaf=[1, 2, 3])}])}), "a data part at the depth limit")
        session = assert_served(await server.call("session.create", {"metadata": nest(LIMIT - 1)}), "session")
    async with serving(kind, identity, workspace, log) as server:
        got = assert_served(await server.call("GetTask", {"id": sent["task"]["id"]}), "GetTask")
        assert got["history"][0]["metadata"] == deepest
        got = assert_served(await server.call("GetTask", {"id": big["task"]["id"]}), "GetTask")
        assert got["history"][0]["metadata"] == largest
        listed = assert_served(await server.call("ListTasks", {}), "ListTasks")
        assert {t["id"] for t in listed["tasks"]} == {sent["task"]["id"], big["task"]["id"], data["task"]["id"]}
        stored = assert_served(await server.call("session.get", {"session_id": session["session_id"]}), "get")
        assert stored["metadata"] == nest(LIMIT - 1)


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_json_deeper_than_the_parser_takes_is_a_parse_error_and_serving_goes_on(identity, kind, tmp_path):
    workspace = workspace_of(identity)
    async with serving(kind, identity, workspace, tmp_path / "server.log") as server:
        for levels in (2_000, 200_000):
            for opener, closer in ((b"[", b"]"), (b'{"a":', b"}")):
                body = (b'{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":'
                        + opener * levels + b"1" + closer * levels + b"}}")
                answer = await server.raw(body)
                assert answer["error"]["code"] in (-32700, INVALID_PARAMS), str(answer)[:300]
                assert "deep" in answer["error"]["message"], answer["error"]
        assert_served(await server.call("_cleveragents/health/check", {}), "health after the deep frames")
        assert_served(await server.call("ListTasks", {}), "ListTasks after the deep frames")
    if kind == "http":
        async with serving(kind, identity, workspace, tmp_path / "server.log") as server:
            body = b'{"message":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
            response = await server.client.post("/message:send", content=body,
                                                headers={"Content-Type": "application/a2a+json"})
            assert response.status_code == 400, response.text[:300]


# -- records that can't be served ----------------------------------------------------------
def _db(workspace: Path) -> sqlite3.Connection:
    return sqlite3.connect(workspace / ".cleveragents" / "state.db", isolation_level=None)


def _task_body(db: sqlite3.Connection, task_id: str) -> dict[str, Any]:
    return json.loads(db.execute("SELECT body FROM tasks WHERE task_id = ?", (task_id,)).fetchone()[0])


def _set_task_body(db: sqlite3.Connection, task_id: str, body: str) -> None:
    assert db.execute("UPDATE tasks SET body = ? WHERE task_id = ?", (body, task_id)).rowcount == 1


def _insert_live_task(db: sqlite3.Connection, task_id: str, body: str) -> None:
    """A working task as an older version would have stored it (the schema's triggers
    count it)."""
    db.execute("INSERT INTO tasks (task_id, context_id, state, status_at, terminal_seq, body) "
               "VALUES (?, 'ctx-bad', 'working', NULL, NULL, ?)", (task_id, body))


def _spoil(workspace: Path, ids: dict[str, Any]) -> dict[str, list[str]]:
    """Write records that can't be served straight into the database; returns the ids
    of each store's bad records."""
    db = _db(workspace)
    try:
        tasks = ids["tasks"]
        deep = _task_body(db, tasks[1])
        deep["history"][0]["metadata"] = nest(300)
        _set_task_body(db, tasks[1], json.dumps(deep))
        _set_task_body(db, tasks[2], "{not json")
        broken = _task_body(db, tasks[3])
        del broken["status"]
        _set_task_body(db, tasks[3], json.dumps(broken))
        parser = _task_body(db, tasks[4])
        parser["history"][0]["parts"][0] = {"kind": "data", "data": "PLACEHOLDER"}
        _set_task_body(db, tasks[4], json.dumps(parser).replace('"PLACEHOLDER"', "[" * 5000 + "]" * 5000))
        _insert_live_task(db, "live-but-broken", '{"id": "live-but-broken"')
        sessions = ids["sessions"]
        db.execute("UPDATE sessions SET metadata = ? WHERE session_id = ?", (json.dumps(nest(300)), sessions[1]))
        db.execute("UPDATE sessions SET metadata = ? WHERE session_id = ?", ("[[[", sessions[2]))
        plans = ids["plans"]
        body = json.loads(db.execute("SELECT body FROM plans WHERE plan_id = ?", (plans[1],)).fetchone()[0])
        body["arguments"]["pattern"] = nest(300)
        db.execute("UPDATE plans SET body = ? WHERE plan_id = ?", (json.dumps(body), plans[1]))
        db.execute("INSERT INTO push_configs (task_id, config_id, body) VALUES (?, 'good', ?)",
                   (tasks[0], json.dumps({"id": "good", "task_id": tasks[0], "url": "https://example.invalid/a"})))
        db.execute("INSERT INTO push_configs (task_id, config_id, body) VALUES (?, 'deep', ?)",
                   (tasks[0], json.dumps({"id": "deep", "task_id": tasks[0], "url": "https://example.invalid/b",
                                          "authentication": nest(300)})))
        db.execute("UPDATE context_pins SET value = ? WHERE key = 'bad'", (json.dumps(nest(300)),))
    finally:
        db.close()
    return {"tasks": [tasks[1], tasks[2], tasks[3], tasks[4], "live-but-broken"],
            "sessions": [sessions[1], sessions[2]], "plans": [plans[1]], "push_configs": [f"{tasks[0]}/deep"],
            "context_pins": [f"session:{sessions[0]}/bad"]}


async def _fill(server: Any) -> dict[str, Any]:
    tasks = []
    for n in range(6):
        sent = assert_served(await server.call("SendMessage", {"message": v1_message(f"t{n}")}), "SendMessage")
        tasks.append(sent["task"]["id"])
    sessions = [assert_served(await server.call("session.create", {"metadata": {"n": n}}), "session")["session_id"]
                for n in range(3)]
    plans = [assert_served(await server.call("_cleveragents/plan/use", {
        "action_name": "replace", "arguments": {"pattern": "hello", "replacement": f"bye{n}", "glob": "*.txt"}}),
        "plan/use")["plan_id"] for n in range(2)]
    for key in ("good", "bad"):
        assert_served(await server.call("_cleveragents/context/set",
                                        {"session_id": sessions[0], "key": key, "value": {"v": key}}), "context/set")
    return {"tasks": tasks, "sessions": sessions, "plans": plans}


def assert_unreadable(answer: dict[str, Any], record_id: str, what: str) -> None:
    assert "error" in answer, f"{what}: served: {str(answer)[:300]}"
    error = answer["error"]
    assert error["code"] == NOT_FOUND, f"{what}: {error}"
    assert "can't be read" in error["message"] and record_id in error["message"], (what, error)
    data = error["data"]
    if isinstance(data, list):  # 1.0: an ErrorInfo whose metadata says which record and why
        info = data[0]
        assert info["reason"] == RECORD_UNREADABLE, (what, info)
        data = info["metadata"]
    assert data["id"] == record_id and data["store"] and data["reason"], (what, data)


async def _check_survivors(server: Any, ids: dict[str, Any], bad: dict[str, list[str]]) -> None:
    tasks = ids["tasks"]
    good_tasks = [tasks[5], tasks[0]]  # newest first
    for method in ("ListTasks", "tasks/list"):
        listed = assert_served(await server.call(method, {}), method)
        assert [t["id"] for t in listed["tasks"]] == good_tasks
    # Pages fill past the records they skip, and end where the records end.
    first = assert_served(await server.call("ListTasks", {"pageSize": 1}), "ListTasks page 1")
    assert [t["id"] for t in first["tasks"]] == [tasks[5]] and first["nextPageToken"]
    second = assert_served(await server.call("ListTasks", {"pageSize": 1, "pageToken": first["nextPageToken"]}),
                           "ListTasks page 2")
    assert [t["id"] for t in second["tasks"]] == [tasks[0]] and second["nextPageToken"] == ""
    for task_id in bad["tasks"]:
        assert_unreadable(await server.call("GetTask", {"id": task_id}), task_id, "GetTask")
        assert_unreadable(await server.call("tasks/get", {"id": task_id}), task_id, "tasks/get")
    assert_unreadable(await server.call("CancelTask", {"id": bad["tasks"][0]}), bad["tasks"][0], "CancelTask")
    assert_served(await server.call("GetTask", {"id": tasks[0]}), "GetTask of a good task")

    sessions = assert_served(await server.call("session.list", {}), "session.list")
    assert [s["session_id"] for s in sessions["sessions"]] == [ids["sessions"][0]]
    for session_id in bad["sessions"]:
        assert_unreadable(await server.call("session.get", {"session_id": session_id}), session_id, "session.get")
    plans = assert_served(await server.call("_cleveragents/plan/list", {}), "plan/list")
    assert [p["plan_id"] for p in plans["plans"]] == [ids["plans"][0]]
    bad_plan = bad["plans"][0]
    assert_unreadable(await server.call("_cleveragents/plan/status", {"plan_id": bad_plan}), bad_plan, "status")
    configs = assert_served(await server.call("ListTaskPushNotificationConfigs", {"taskId": tasks[0]}), "configs")
    assert [c["id"] for c in configs["configs"]] == ["good"]
    shown = assert_served(await server.call("_cleveragents/context/show", {"session_id": ids["sessions"][0]}), "show")
    pinned = next(tier for tier in shown["tiers"] if tier["name"] == "pinned")
    assert [item["key"] for item in pinned["items"]] == ["good"]


def _reported(diagnostics: dict[str, Any]) -> dict[tuple[str, str], str]:
    store = next(check for check in diagnostics["checks"] if check["name"] == "store")
    assert store["status"] == "warning", store
    return {(entry["store"], entry["id"]): entry["reason"] for entry in store["unreadable"]}


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_records_that_cant_be_served_are_skipped_logged_once_and_reported(identity, kind, tmp_path):
    workspace = workspace_of(identity)
    log = tmp_path / "server.log"
    async with serving(kind, identity, workspace, log) as server:
        ids = await _fill(server)
    bad = _spoil(workspace, ids)  # behind the server's back, as an older version or a bug would
    identity.own(workspace)
    for restart in range(2):  # and again after a restart
        async with serving(kind, identity, workspace, log) as server:
            for _ in range(3):
                await _check_survivors(server, ids, bad)
            reported = _reported(assert_served(await server.call("_cleveragents/diagnostics/run", {}), "diagnostics"))
            if restart:  # a new message in the session still gets its context, the bad records aside
                assert_served(await server.call("SendMessage", {"message": v1_message(
                    "again", contextId=ids["sessions"][0])}), "SendMessage in a session whose records are partly bad")
    expected = {(store, record_id) for store, record_ids in bad.items() for record_id in record_ids}
    assert expected <= set(reported), (expected - set(reported), reported)
    assert "deeper than" in reported[("tasks", bad["tasks"][0])]
    assert "JSON" in reported[("tasks", bad["tasks"][1])]
    assert "status" in reported[("tasks", bad["tasks"][2])]
    assert "deeper than" in reported[("tasks", bad["tasks"][3])]
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    for store, record_ids in bad.items():
        for record_id in record_ids:
            warnings = [line for line in text.splitlines() if "can't be served" in line and f" {record_id} " in line]
            # Once per record and process: two processes ran over these records.
            assert len(warnings) == 2, (store, record_id, warnings)


async def test_a_record_spoiled_while_the_server_runs_is_skipped_at_once(identity, tmp_path):
    workspace = workspace_of(identity)
    async with serving("stdio", identity, workspace, tmp_path / "server.log") as server:
        sent = [assert_served(await server.call("SendMessage", {"message": v1_message(f"t{n}")}), "send")["task"]["id"]
                for n in range(2)]
        db = _db(workspace)
        try:
            body = _task_body(db, sent[0])
            body["metadata"] = nest(500)
            _set_task_body(db, sent[0], json.dumps(body))
        finally:
            db.close()
        listed = assert_served(await server.call("ListTasks", {}), "ListTasks")
        assert [t["id"] for t in listed["tasks"]] == [sent[1]]
        assert_unreadable(await server.call("GetTask", {"id": sent[0]}), sent[0], "GetTask")
        reported = _reported(assert_served(await server.call("_cleveragents/diagnostics/run", {}), "diagnostics"))
        assert ("tasks", sent[0]) in reported


# -- the in-memory store: a record that can't be served, put there by a bug ----------------
async def test_memory_store_skips_and_reports_records_that_cant_be_served(tmp_path):
    from cleveragents.a2a.facade import A2ALocalFacade
    from cleveragents.config import Settings
    from cleveragents.container import Container
    from cleveragents.domain.plan import Plan
    from cleveragents.domain.session import Session
    from cleveragents.domain.task import Message, Part, PushConfig, Role, Task, TaskState, TaskStatus

    container = Container(Settings(workspace=tmp_path, memory=True))
    facade = A2ALocalFacade(container)
    ids = iter(range(1, 1000))

    async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = await facade.dispatch({"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params})
        return response.to_wire()

    try:
        good = assert_served(await call("SendMessage", {"message": v1_message("good")}), "send")["task"]["id"]
        session = assert_served(await call("session.create", {}), "session")["session_id"]
        plan_id = assert_served(await call("_cleveragents/plan/use", {
            "action_name": "replace", "arguments": {"pattern": "a", "replacement": "b"}}), "plan/use")["plan_id"]
        store = container.store
        # What a bug could store without passing the request limits: an actor's output, say.
        message = Message("m-bad", Role.AGENT, (Part.of_data(nest(400)),), "ctx", "bad-task")
        await store.add_task(Task("bad-task", "ctx", TaskStatus(TaskState.COMPLETED, "2026-01-01T00:00:00Z"),
                                  (message,)))
        await store.add_session(Session("bad-session", "local/default", "2026-01-01T00:00:00Z",
                                        "2026-01-01T00:00:00Z", metadata=nest(400)))
        plan = await store.get_plan(plan_id)
        assert isinstance(plan, Plan)
        from dataclasses import replace

        await store.add_plan(replace(plan, plan_id="bad-plan", arguments={"deep": nest(400)}))
        await store.put_push_config(PushConfig("deep", good, "https://example.invalid", None, nest(400)))
        await store.set_pin(f"session:{session}", "bad", nest(400))
        await store.set_pin(f"session:{session}", "good", 1)

        for _ in range(3):
            listed = assert_served(await call("ListTasks", {}), "ListTasks")
            assert [t["id"] for t in listed["tasks"]] == [good]
            sessions = assert_served(await call("session.list", {}), "session.list")
            assert [s["session_id"] for s in sessions["sessions"]] == [session]
            plans = assert_served(await call("_cleveragents/plan/list", {}), "plan/list")
            assert [p["plan_id"] for p in plans["plans"]] == [plan_id]
            configs = assert_served(await call("ListTaskPushNotificationConfigs", {"taskId": good}), "configs")
            assert configs["configs"] == []
        assert_unreadable(await call("GetTask", {"id": "bad-task"}), "bad-task", "GetTask")
        assert_unreadable(await call("session.get", {"session_id": "bad-session"}), "bad-session", "session.get")
        assert_unreadable(await call("_cleveragents/plan/status", {"plan_id": "bad-plan"}), "bad-plan", "status")
        shown = assert_served(await call("_cleveragents/context/show", {"session_id": session}), "show")
        pinned = next(tier for tier in shown["tiers"] if tier["name"] == "pinned")
        assert [item["key"] for item in pinned["items"]] == ["good"]
        reported = _reported(assert_served(await call("_cleveragents/diagnostics/run", {}), "diagnostics"))
        assert {("tasks", "bad-task"), ("sessions", "bad-session"), ("plans", "bad-plan"),
                ("push_configs", f"{good}/deep"), ("context_pins", f"session:{session}/bad")} <= set(reported), reported
    finally:
        await container.aclose()
        facade.close()

# -- a remote agent's answers are held to the same limits ----------------------------------
@asynccontextmanager
async def remote_agent(workspace: Path, answer: Callable[[], Any]) -> AsyncIterator[str]:
    """A remote A2A agent's URL: its card is real (an in-memory server's), and every
    call is answered with ``answer()``, an ASGI response."""
    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app
    from tests.contract.runners import UvicornServer

    real = build_app(settings=Settings(workspace=workspace, memory=True))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            await answer()(scope, receive, send)
            return
        await real(scope, receive, send)

    async with UvicornServer(app) as url:
        yield url


async def test_a_page_of_big_tasks_ends_at_the_page_budget_and_the_next_goes_on(workspace):
    """A task holds every message sent on it, each up to the message size limit, and a
    page may list a hundred: what a store reads and decodes for one ListTasks could be
    gigabytes. A page ends once its tasks pass PAGE_CHARS of stored JSON (the spec lets a
    page hold fewer than asked), and its token goes on from there."""
    from cleveragents.app.paging import PAGE_CHARS

    big = "b" * (PAGE_CHARS // 3 + 1024)
    async with in_process(workspace) as call:
        for n in range(6):
            message = {**v1_message(), "contextId": "heavy", "parts": [{"text": f"{n} {big}"}]}
            assert "result" in await call("SendMessage", {"message": message})
        pages, token = [], ""
        while True:
            listed = (await call("ListTasks", {"contextId": "heavy", "pageSize": 100, "historyLength": 1,
                                               **({"pageToken": token} if token else {})}))["result"]
            pages.append(len(listed["tasks"]))
            assert listed["totalSize"] == 6
            if not (token := listed["nextPageToken"]):
                break
    assert pages == [3, 3], pages


def sse_result(result: dict[str, Any]) -> bytes:
    """One SSE event of a stream's JSON-RPC result."""
    return f"data: {json.dumps({'jsonrpc': '2.0', 'id': 1, 'result': result})}\n\n".encode()


REMOTE_WORKING = sse_result({"task": {"id": "r1", "contextId": "rc", "status": {"state": "TASK_STATE_WORKING"}}})
REMOTE_DONE = sse_result({"statusUpdate": {"taskId": "r1", "contextId": "rc",
                                           "status": {"state": "TASK_STATE_COMPLETED"}}})


def assert_failed_over(task: dict[str, Any], limit: str, most: int) -> None:
    """``task`` failed over the budget ``limit`` of ``most``, and says so in its metadata."""
    assert task["status"]["state"] == "TASK_STATE_FAILED", task["status"]
    error = task["metadata"]["error"]
    assert error["type"] == "BudgetExceededError" and error["data"] == {"limit": limit, "max": most}, error


async def task_relayed_from(tmp_path: Path, workspace: Path, stream: Callable[[], AsyncIterator[bytes]]) -> dict:
    """The local task of a message sent to a remote agent (``a2a/<url>``) whose
    stream is ``stream()``."""
    from starlette.responses import StreamingResponse

    async with remote_agent(tmp_path, lambda: StreamingResponse(stream(), media_type="text/event-stream")) as url, \
            in_process(workspace) as call:
        session = (await call("session.create", {"actor_name": f"a2a/{url}"}))["result"]["session_id"]
        return (await call("SendMessage", {"message": {**v1_message(), "contextId": session}}))["result"]["task"]


async def test_a_remote_agent_answering_deep_json_is_an_invalid_response(tmp_path):
    """What a remote agent answers becomes the local task, which every client lists."""
    from starlette.responses import Response

    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.errors import InvalidAgentResponseError

    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}, "metadata": nest(DEEP)}
    answers = [json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": task}}).encode(),
               b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 100_000 + b"]" * 100_000 + b"}"]
    async with remote_agent(tmp_path, lambda: Response(answers[0], media_type="application/json")) as url:
        for expected in ("nested deeper than 64 levels", "not a JSON-RPC response"):
            async with A2AClient(ServerConnectionConfig(url=url, token="unused")) as client:
                with pytest.raises(InvalidAgentResponseError, match=expected):
                    await client.send("hi")
            answers.pop(0)


async def test_a_remote_agent_streaming_a_line_that_never_ends_is_cut_off(tmp_path):
    """An SSE line with no end would be held whole before any event is parsed: the
    stream is refused once the line passes the event limit, not when memory runs out."""
    from starlette.responses import StreamingResponse

    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.errors import InvalidAgentResponseError
    from cleveragents.domain.event_stream import MAX_EVENT_CHARS

    chunk, most = b"a" * 65536, 6 * MAX_EVENT_CHARS
    sent = [0]

    async def endless_line() -> AsyncIterator[bytes]:
        yield b"data: "
        while sent[0] < most:
            sent[0] += len(chunk)
            yield chunk

    async with remote_agent(tmp_path, lambda: StreamingResponse(endless_line(), media_type="text/event-stream")) as url:
        async with A2AClient(ServerConnectionConfig(url=url, token="unused")) as client:
            with pytest.raises(InvalidAgentResponseError, match=f"exceeds {MAX_EVENT_CHARS} characters"):
                async for _ in client.stream("hi"):
                    pass
        # Read while the server runs (stopping, it ends the stream). The sockets hold a few MiB.
        assert sent[0] < MAX_EVENT_CHARS + in_flight_bytes() + 1024 * 1024, f"{sent[0]} bytes were sent"


async def test_a_remote_agent_replying_without_end_fails_the_task_at_the_reply_limit(tmp_path, workspace):
    """Each event of a stream is bounded; their number is not. A remote agent that
    streams its reply on and on would grow the local task, which every client reads and
    the store keeps, without bound."""
    from cleveragents.app.task_turns import MAX_REPLY_CHARS

    chunk = "a" * (256 * 1024)

    async def endless_reply() -> AsyncIterator[bytes]:
        yield REMOTE_WORKING
        for n in range(2 * MAX_REPLY_CHARS // len(chunk)):
            yield sse_result({"artifactUpdate": {"taskId": "r1", "contextId": "rc", "append": n > 0,
                                                 "artifact": {"artifactId": "a1", "parts": [{"text": chunk}]}}})
        yield REMOTE_DONE

    task = await task_relayed_from(tmp_path, workspace, endless_reply)
    assert_failed_over(task, "max_reply_chars", MAX_REPLY_CHARS)
    kept = sum(len(part.get("text", "")) for artifact in task["artifacts"] for part in artifact["parts"])
    assert 0 < kept <= MAX_REPLY_CHARS, kept  # what came within the limit stays


async def test_a_remote_agent_replying_in_countless_small_parts_fails_the_task_at_the_parts_limit(
        tmp_path, workspace):
    """A part of its own per chunk, each small: the reply stays far below the size
    limit while every part added costs a walk over those before it."""
    from cleveragents.app.task_turns import MAX_REPLY_PARTS

    async def countless_parts() -> AsyncIterator[bytes]:
        yield REMOTE_WORKING
        batch = b"".join(sse_result({"artifactUpdate": {
            "taskId": "r1", "contextId": "rc", "append": True,
            "artifact": {"artifactId": f"a{n % 2}", "parts": [{"data": n}]}}}) for n in range(1000))
        for _ in range(MAX_REPLY_PARTS // 1000 + 2):
            yield batch
        yield REMOTE_DONE

    task = await task_relayed_from(tmp_path, workspace, countless_parts)
    assert_failed_over(task, "max_reply_parts", MAX_REPLY_PARTS)
    assert sum(len(artifact["parts"]) for artifact in task["artifacts"]) == MAX_REPLY_PARTS


@pytest.mark.parametrize("where", ["artifact", "part"])
async def test_a_remote_agent_replying_in_metadata_fails_the_task_at_the_reply_limit(where, tmp_path, workspace):
    """What a reply costs is all it holds: an artifact's metadata and names too, and an
    artifact with no parts, which still costs a walk over those before it."""
    from cleveragents.app.task_turns import MAX_REPLY_CHARS

    filler = {"note": "m" * (1024 * 1024)}

    def artifact(n: int) -> dict[str, Any]:
        if where == "artifact":
            return {"artifactId": f"a{n}", "parts": [], "metadata": filler}
        return {"artifactId": f"a{n}", "parts": [{"data": 1, "metadata": filler}]}

    async def heavy_metadata() -> AsyncIterator[bytes]:
        yield REMOTE_WORKING
        for n in range(2 * MAX_REPLY_CHARS // (1024 * 1024)):
            yield sse_result({"artifactUpdate": {"taskId": "r1", "contextId": "rc", "artifact": artifact(n)}})
        yield REMOTE_DONE

    task = await task_relayed_from(tmp_path, workspace, heavy_metadata)
    assert_failed_over(task, "max_reply_chars", MAX_REPLY_CHARS)
    assert len(json.dumps(task["artifacts"])) <= MAX_REPLY_CHARS + 2 * 1024 * 1024


@pytest.mark.parametrize("stray", ["artifactUpdate", "statusUpdate"])
async def test_a_remote_agents_stream_about_another_task_fails_ours(stray, tmp_path, workspace):
    """One message's stream is about one remote task. An item about another would put
    that task's artifact in ours, or make it the remote task our next message goes to
    (and a cancel cancels)."""
    item = ({"artifactUpdate": {"taskId": "someone-elses", "contextId": "rc", "artifact": {
                "artifactId": "x", "parts": [{"text": "not yours"}]}}} if stray == "artifactUpdate"
            else {"statusUpdate": {"taskId": "someone-elses", "contextId": "victim",
                                   "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}})

    async def mixed() -> AsyncIterator[bytes]:
        yield REMOTE_WORKING
        yield sse_result(item)
        yield REMOTE_DONE

    task = await task_relayed_from(tmp_path, workspace, mixed)
    assert task["status"]["state"] == "TASK_STATE_FAILED", task["status"]
    reason = task["status"]["message"]["parts"][0]["text"]
    assert "the remote agent's stream for task r1 has an item about task someone-elses" in reason, reason
    assert "not yours" not in json.dumps(task)


async def test_a_remote_agent_replying_in_countless_empty_artifacts_fails_the_task_at_the_parts_limit(
        tmp_path, workspace):
    from cleveragents.app.task_turns import MAX_REPLY_PARTS

    async def countless_artifacts() -> AsyncIterator[bytes]:
        yield REMOTE_WORKING
        for start in range(0, MAX_REPLY_PARTS + 2000, 1000):
            yield b"".join(sse_result({"artifactUpdate": {"taskId": "r1", "contextId": "rc", "artifact": {
                "artifactId": f"a{n}", "parts": []}}}) for n in range(start, start + 1000))
        yield REMOTE_DONE

    task = await task_relayed_from(tmp_path, workspace, countless_artifacts)
    assert_failed_over(task, "max_reply_parts", MAX_REPLY_PARTS)
    assert len(task["artifacts"]) == MAX_REPLY_PARTS


@pytest.mark.parametrize("card", ["endless", "deep"])
async def test_a_remote_agent_card_that_never_ends_or_nests_deep_is_refused(card):
    """The card is the first thing read from a remote agent, before any call."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.client_wire import MAX_RESPONSE_BYTES
    from cleveragents.a2a.errors import InvalidAgentResponseError
    from tests.contract.runners import UvicornServer

    chunk = b"a" * 65536
    sent = [0]

    async def body() -> AsyncIterator[bytes]:
        if card == "deep":
            yield b"[" * 100_000 + b"]" * 100_000
            return
        yield b'{"name": "'
        while sent[0] < 3 * MAX_RESPONSE_BYTES:  # past the limit and all the kernel may hold
            sent[0] += len(chunk)
            yield chunk

    async def hostile(request: Any) -> StreamingResponse:
        return StreamingResponse(body(), media_type="application/json")

    async with UvicornServer(Starlette(routes=[Route("/{path:path}", hostile)])) as url:
        refused = f"more than {MAX_RESPONSE_BYTES} bytes" if card == "endless" else "is not a JSON object"
        with pytest.raises(InvalidAgentResponseError, match=refused):
            async with A2AClient(ServerConnectionConfig(url=url, token="unused")) as client:
                await client.send("hi")
        assert sent[0] < MAX_RESPONSE_BYTES + in_flight_bytes() + 1024 * 1024, f"{sent[0]} bytes were sent"


@pytest.mark.parametrize("what", ["card", "answer"])
async def test_a_remote_agent_dripping_an_answer_is_cut_off_at_the_timeout(what, tmp_path):
    """``timeout_seconds`` bounds a whole answer, not each read: a peer that sends a byte
    within every read's timeout would otherwise hold the call for as long as it likes."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from cleveragents.a2a.client import A2AClient, A2AClientTimeoutError, ServerConnectionConfig
    from tests.contract.runners import UvicornServer

    async def drip() -> AsyncIterator[bytes]:
        for _ in range(120):  # 6 s of JSON's leading white space, then an answer
            yield b" "
            await asyncio.sleep(0.05)
        yield b"{}"

    def dripping() -> StreamingResponse:
        return StreamingResponse(drip(), media_type="application/json")

    async def hostile(request: Any) -> StreamingResponse:
        return dripping()

    agent = (remote_agent(tmp_path, dripping) if what == "answer"
             else UvicornServer(Starlette(routes=[Route("/{path:path}", hostile)])))
    async with agent as url:
        started = time.monotonic()
        with pytest.raises(A2AClientTimeoutError, match="no answer within 1s"):
            async with A2AClient(ServerConnectionConfig(url=url, token="unused", timeout_seconds=1)) as client:
                await client.send("hi")
        assert time.monotonic() - started < 3


async def test_the_card_fetch_is_bounded_as_a_whole_not_per_path_tried():
    """The client looks for the card under several paths: a peer answering each with a
    slow 404 would otherwise hold the fetch for that many timeouts."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from cleveragents.a2a.client import A2AClient, A2AClientTimeoutError, ServerConnectionConfig
    from tests.contract.runners import UvicornServer

    async def slow_not_found(request: Any) -> Response:
        await asyncio.sleep(0.9)
        return Response(status_code=404)

    async with UvicornServer(Starlette(routes=[Route("/{path:path}", slow_not_found)])) as url:
        started = time.monotonic()
        with pytest.raises(A2AClientTimeoutError, match="no answer within 1s"):
            async with A2AClient(ServerConnectionConfig(url=f"{url}/agent", token="unused", timeout_seconds=1)):
                pass
        assert time.monotonic() - started < 2


async def test_a_key_set_dripping_its_answer_is_cut_off_at_the_timeout(caplog):
    """A signed card is checked against keys read from a JWK Set URL, on another host:
    one answering a byte at a time would hold the check, and every call waiting on the
    client's connect, for as long as it liked."""
    from cleveragents.a2a.card_signing import TrustedKeys
    from tests.dripping_webhook import DrippingWebhook

    key_host = DrippingWebhook(lasting=6)
    try:
        keys = TrustedKeys(jwks_url=f"{key_host.url}/jwks.json", timeout=1)
        started = time.monotonic()
        assert await keys.find("k1") == []
        assert time.monotonic() - started < 3
    finally:
        key_host.close()
    assert "could not read the trusted JWK Set" in caplog.text
    assert "no answer within 1s" in caplog.text


@pytest.mark.parametrize("event", ["line separators", "too large"])
async def test_a_plain_call_answered_with_sse_is_read_as_a_stream_is(event, tmp_path):
    """A peer may answer a unary call with an event stream; its last event is the
    answer, read with the same line endings and limits as a stream."""
    from starlette.responses import Response

    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.errors import InvalidAgentResponseError
    from cleveragents.domain.event_stream import MAX_EVENT_CHARS

    text = "one\u2028two\u2029three\x85four" if event == "line separators" else "a" * (MAX_EVENT_CHARS + 1)
    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED", "message": {
        "role": "ROLE_AGENT", "messageId": "m1", "parts": [{"text": text}]}}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": task}}, ensure_ascii=False)
    stream = f"data: {body}\n\n".encode()
    async with remote_agent(tmp_path, lambda: Response(stream, media_type="text/event-stream")) as url:
        async with A2AClient(ServerConnectionConfig(url=url, token="unused")) as client:
            if event == "too large":
                with pytest.raises(InvalidAgentResponseError, match=f"exceeds {MAX_EVENT_CHARS} characters"):
                    await client.send("hi")
            else:
                answered = await client.send("hi")
                assert answered.status.message is not None and answered.status.message.parts[0].text == text


async def test_a_task_holds_a_bounded_number_of_push_configs(workspace):
    """Each config is a webhook every event of the task goes to: a caller adding them
    without end would grow the store, and each event's deliveries, without bound."""
    from cleveragents.app.tasks import MAX_PUSH_CONFIGS

    async with in_process(workspace, push_allowed_networks=("127.0.0.1/32",)) as call:
        task_id = (await call("SendMessage", {"message": v1_message()}))["result"]["task"]["id"]

        def config(n: int, **extra: Any) -> dict[str, Any]:
            return {"taskId": task_id, "url": f"http://127.0.0.1:9/hook/{n}", **extra}

        made = [(await call("CreateTaskPushNotificationConfig", config(n)))["result"]["id"]
                for n in range(MAX_PUSH_CONFIGS)]
        refused = await call("CreateTaskPushNotificationConfig", config(MAX_PUSH_CONFIGS))
        assert refused["error"]["code"] == INVALID_PARAMS, refused
        assert f"at most {MAX_PUSH_CONFIGS} push notification configs" in refused["error"]["message"], refused
        # one already there may still be replaced, and a deleted one makes room
        replaced = await call("CreateTaskPushNotificationConfig", config(0, id=made[0], token="new"))
        assert replaced["result"]["id"] == made[0], replaced
        await call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": made[1]})
        assert "result" in await call("CreateTaskPushNotificationConfig", config(MAX_PUSH_CONFIGS))
        listed = await call("ListTaskPushNotificationConfigs", {"taskId": task_id})
        assert len(listed["result"]["configs"]) == MAX_PUSH_CONFIGS
