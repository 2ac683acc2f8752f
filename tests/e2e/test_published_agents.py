"""Published agents, each served on stdio by its own script (``examples/`` and
``tests/e2e/agents/``), driven over the wire: the example in both dialects, 16 streams
at once, cancels at every stage, multi-turn tasks, eviction, a restart and webhooks."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.agent_server import DIALECTS, EXAMPLES, V03, V1, AgentServer, Dialect, Item, exact_v03, exact_v1

SLOW_AGENT_SECONDS = 5 * 0.15  # slow_agent.py: CHUNKS * DELAY
AFTER_THE_AGENT = SLOW_AGENT_SECONDS + 0.25  # long enough for any late result to land
TOKEN_HEADER = "x-a2a-notification-token"  # X-A2A-Notification-Token; HTTP names ignore case


def task_id_of(server: AgentServer, msg_id: int, dialect: Dialect) -> str:
    kind, task = dialect.item(server.wait_for_items(msg_id, 1)[0])
    assert kind == "task"
    return task["id"]


def only_task_in(server: AgentServer, context: str) -> dict[str, Any]:
    """The task of ``context``, once the server has made it."""
    deadline = time.monotonic() + 10
    while not (tasks := server.result("ListTasks", {"contextId": context})["tasks"]):
        assert time.monotonic() < deadline, f"no task in {context}"
        time.sleep(0.01)
    (task,) = tasks
    return task


# -- the servers: started together, so their start-ups overlap ---------------------------
@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, AgentServer]]:
    """The asking agent keeps its state in a workspace, with room for 5 finished tasks.
    Every test that uses it ends its tasks but the eviction test's live one, so each
    test's own tasks are the newest, whatever ran before."""
    root = tmp_path_factory.mktemp("agents")
    started = {
        "research": AgentServer(EXAMPLES / "research_agent.py", cwd=root, env={"CLEVERAGENTS_MEMORY": "1"}),
        "slow": AgentServer.agent("slow_agent", "--memory", cwd=root),
        "asking": AgentServer.agent("asking_agent", cwd=tmp_path_factory.mktemp("workspace"), env={
            "CLEVERAGENTS_MAX_TERMINAL_TASKS": "5",
            "no_proxy": "127.0.0.1",  # the test's webhooks are local, whatever proxy is set
            "CLEVERAGENTS_PUSH_ALLOWED_NETWORKS": "127.0.0.1/32",  # which pushes may reach only when allowed
        }),
        "sync_barrier": AgentServer.agent("sync_barrier_agent", "--memory", cwd=root),
        "async_barrier": AgentServer.agent("async_barrier_agent", "--memory", cwd=root),
    }
    yield started
    with ThreadPoolExecutor(len(started)) as pool:  # their shutdowns overlap too
        list(pool.map(AgentServer.close, started.values()))


class Webhook(http.server.ThreadingHTTPServer):
    """Records each POST: (path, headers by lower-case name, JSON body)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.posts: list[tuple[str, dict[str, str], Any]] = []
        self.changed = threading.Condition()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def wait_for(self, path: str, count: int, timeout: float = 10.0) -> list[tuple[dict[str, str], Any]]:
        def at_path() -> list[tuple[dict[str, str], Any]]:
            return [(headers, body) for p, headers, body in self.posts if p == path]

        with self.changed:
            assert self.changed.wait_for(lambda: len(at_path()) >= count, timeout), self.posts
            return at_path()


class _Recorder(http.server.BaseHTTPRequestHandler):
    server: Webhook

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.changed:
            headers = {name.lower(): value for name, value in self.headers.items()}
            self.server.posts.append((self.path, headers, body))
            self.server.changed.notify_all()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    server = Webhook()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# -- 1. the example -------------------------------------------------------------------------
@DIALECTS
def test_the_example_runs_a_tool_by_name_and_keeps_the_task(servers, dialect):
    research = servers["research"]
    task = dialect.task_of(research.result(dialect.send, dialect.message('search_web query="agent protocols"')))
    assert task["status"]["state"] == dialect.state("completed")
    assert [m["role"] for m in task["history"]] == [dialect.role("user"), dialect.role("agent")]
    assert task["history"][1]["parts"] == [dialect.part("Results for: agent protocols")]
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "response" and artifact["parts"] == task["history"][1]["parts"]

    counted = dialect.task_of(research.result(dialect.send, dialect.message('word_count text="one two three"')))
    assert counted["history"][1]["parts"] == [dialect.part("3")]

    got = research.result(dialect.get, {"id": task["id"], "historyLength": 1})
    exact_v1("task", got) if dialect.v1 else exact_v03("task", got)
    assert dialect.text(got) == ["Results for: agent protocols"] and got["status"] == task["status"]


@DIALECTS
def test_the_example_streams_each_update_then_answers_with_the_last(servers, dialect):
    research = servers["research"]
    msg_id = research.send(dialect.stream, dialect.message('search_web query="streams"'))
    response = research.response(msg_id)
    items = [dialect.item(item) for item in research.items(msg_id)]
    # working, then the tool's call as a working update of its own, then the reply
    assert [kind for kind, _ in items] == ["task", "statusUpdate", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert [m for m, _ in research.items(msg_id)] == ["task/statusUpdate"] * 3 + ["task/artifactUpdate",
                                                                                  "task/statusUpdate"]
    states = [items[i][1]["status"]["state"] for i in (0, 1, 2, 4)]
    assert states == [dialect.state(s) for s in ("submitted", "working", "working", "completed")]
    call = items[2][1]["metadata"]["cleveragents.tool_call"]
    assert call["name"] == "search_web" and call["arguments"] == {"query": "streams"} and not call["failed"]
    assert items[3][1]["artifact"]["parts"] == [dialect.part("Results for: streams")]
    assert dialect.item(response["result"]) == items[-1]
    if not dialect.v1:  # 0.3 marks the stream's end; 1.0 ends it at a terminal state
        assert [items[i][1]["final"] for i in (1, 2, 4)] == [False, False, True]


@DIALECTS
def test_the_example_lists_its_tasks_page_by_page(servers, dialect):
    research = servers["research"]
    context = f"ctx-{time.monotonic_ns()}"
    ids = [dialect.task_of(research.result(dialect.send, dialect.message(f"word_count text=t{n}", contextId=context)))
           ["id"] for n in range(5)]
    seen, token, pages = [], "", 0
    while True:
        page = research.result(dialect.list, {"contextId": context, "pageSize": 2, "pageToken": token})
        assert page["totalSize"] == 5 and page["pageSize"] == 2
        if dialect.v1:
            exact_v1("list", page)
        for task in page["tasks"]:
            exact_v1("task", task) if dialect.v1 else exact_v03("task", task)
        seen += [t["id"] for t in page["tasks"]]
        pages += 1
        if not (token := page["nextPageToken"]):
            break
    assert pages == 3 and seen == ids[::-1]  # newest first


@DIALECTS
def test_the_example_refuses_to_cancel_or_subscribe_a_finished_task(servers, dialect):
    research = servers["research"]
    task = dialect.task_of(research.result(dialect.send, dialect.message("word_count text=done")))
    refused = research.error(dialect.cancel, {"id": task["id"]})
    assert refused["code"] == -32002
    assert research.error(dialect.subscribe, {"id": task["id"]})["code"] == -32004
    assert research.result(dialect.get, {"id": task["id"]})["status"] == task["status"]


def test_the_example_announces_its_own_agent_card(servers):
    card = servers["research"].initialize_result()["capabilities"]["experimental"]["a2a"]["agentCard"]
    exact_v1("card", card)
    assert card["name"] == "Research Assistant"
    assert card["description"] == "Research Analyst. Help users research topics"
    assert [skill["id"] for skill in card["skills"]] == ["search_web", "word_count"]


# -- 2. concurrency -----------------------------------------------------------------------
@pytest.mark.parametrize("agent", ["sync_barrier", "async_barrier"])
def test_16_streams_run_at_once(servers, agent):
    """Each handler waits at a barrier of 16: all complete only if all ran together."""
    server = servers[agent]
    msg_ids = [server.send("SendStreamingMessage", V1.message(f"call {n}")) for n in range(16)]
    for n, msg_id in enumerate(msg_ids):
        final = server.response(msg_id)["result"]["statusUpdate"]
        assert final["status"]["state"] == "TASK_STATE_COMPLETED", server.stderr()[-2000:]
        artifact = server.items(msg_id)[-2][1]["artifactUpdate"]["artifact"]
        assert artifact["parts"] == [{"text": f"call {n}: met 15 others"}]


# -- 3. cancel at every stage ---------------------------------------------------------------
@dataclass(frozen=True)
class Canceled:
    server: AgentServer
    dialect: Dialect
    task_id: str
    stream: int | None = None  # the request id of the stream it ended

    def snapshot(self) -> tuple[dict[str, Any], list[Item]]:
        task = self.server.result(self.dialect.get, {"id": self.task_id})
        assert task["status"]["state"] == self.dialect.state("canceled")
        return task, self.server.items(self.stream) if self.stream is not None else []


def cancel_after_an_immediate_send(slow: AgentServer, dialect: Dialect) -> Canceled:
    sent = dialect.task_of(slow.result(dialect.send, dialect.message("go", dialect.immediately)))
    assert sent["status"]["state"] in {dialect.state("submitted"), dialect.state("working")}
    canceled = slow.result(dialect.cancel, {"id": sent["id"]})
    exact_v1("task", canceled) if dialect.v1 else exact_v03("task", canceled)
    assert canceled["status"]["state"] == dialect.state("canceled") and "artifacts" not in canceled
    return Canceled(slow, dialect, sent["id"])


def cancel_mid_stream(slow: AgentServer, dialect: Dialect) -> Canceled:
    """CancelTask after the first chunk: the stream ends with a final canceled update."""
    msg_id = slow.send(dialect.stream, dialect.message("go"))
    task_id = task_id_of(slow, msg_id, dialect)
    slow.wait_for_items(msg_id, 3)  # the task, working, the first chunk
    assert slow.result(dialect.cancel, {"id": task_id})["status"]["state"] == dialect.state("canceled")
    kind, last = dialect.item(slow.response(msg_id)["result"])
    assert kind == "statusUpdate" and last["status"]["state"] == dialect.state("canceled")
    assert last.get("final", True) is True  # 0.3 says so; 1.0 ends a stream at a terminal state
    items = [dialect.item(item) for item in slow.items(msg_id)]
    assert items[-1] == (kind, last)
    chunks = [p["artifact"]["parts"][0]["text"] for k, p in items if k == "artifactUpdate"]
    stored = slow.result(dialect.get, {"id": task_id})["artifacts"][0]["parts"]
    assert 1 <= len(chunks) < 5 and [p["text"] for p in stored] == chunks
    return Canceled(slow, dialect, task_id, msg_id)


def cancel_by_cancel_request(slow: AgentServer, method: str) -> Canceled:
    """LSP's ``$/cancelRequest`` for the request that runs the task cancels the task."""
    context = f"ctx-{time.monotonic_ns()}"
    msg_id = slow.send(method, V1.message("go", contextId=context))
    task = only_task_in(slow, context)
    slow.notify("$/cancelRequest", {"id": msg_id})
    assert slow.response(msg_id)["error"]["code"] == -32800  # LSP: RequestCancelled
    return Canceled(slow, V1, task["id"])


def cancel_a_blocking_send(slow: AgentServer, dialect: Dialect) -> Canceled:
    """CancelTask while a blocking send waits for its task: the send answers with it."""
    context = f"ctx-{time.monotonic_ns()}"
    msg_id = slow.send(dialect.send, dialect.message("go", contextId=context))
    task = only_task_in(slow, context)
    assert slow.result(dialect.cancel, {"id": task["id"]})["status"]["state"] == dialect.state("canceled")
    answered = dialect.task_of(slow.response(msg_id)["result"])
    assert answered["id"] == task["id"] and answered["status"]["state"] == dialect.state("canceled")
    return Canceled(slow, dialect, task["id"])


def cancel_while_input_is_required(asking: AgentServer, dialect: Dialect) -> Canceled:
    waiting = dialect.task_of(asking.result(dialect.send, dialect.message("hi")))
    assert waiting["status"]["state"] == dialect.state("input-required")
    assert asking.result(dialect.cancel, {"id": waiting["id"]})["status"]["state"] == dialect.state("canceled")
    assert asking.error(dialect.send, dialect.message("a.py", taskId=waiting["id"]))["code"] == -32004
    return Canceled(asking, dialect, waiting["id"])


def test_a_cancel_at_any_stage_is_final(servers):
    """Once the slow agent would have finished, every canceled task and stream is still
    exactly as its cancel left it: no late chunk or result lands."""
    slow, asking = servers["slow"], servers["asking"]
    canceled = [stage(slow, dialect) for dialect in (V1, V03)
                for stage in (cancel_after_an_immediate_send, cancel_mid_stream, cancel_a_blocking_send)]
    canceled += [cancel_by_cancel_request(slow, method) for method in ("SendStreamingMessage", "SendMessage")]
    canceled += [cancel_while_input_is_required(asking, dialect) for dialect in (V1, V03)]
    snapshots = [c.snapshot() for c in canceled]
    time.sleep(AFTER_THE_AGENT)
    assert [c.snapshot() for c in canceled] == snapshots


@DIALECTS
def test_a_finished_task_refuses_a_cancel_and_stays_as_it_was(servers, dialect):
    asking = servers["asking"]
    done = dialect.task_of(asking.result(dialect.send, dialect.message("hi")))
    done = dialect.task_of(asking.result(dialect.send, dialect.message("a.py", taskId=done["id"])))
    refused = asking.error(dialect.cancel, {"id": done["id"]})
    assert refused["code"] == -32002
    reason = refused["data"][0]["reason"] if dialect.v1 else None
    assert reason in (None, "TASK_NOT_CANCELABLE")
    assert asking.result(dialect.get, {"id": done["id"]}) == done


def test_subscribers_follow_running_tasks_to_their_end(servers):
    slow = servers["slow"]
    sent = {dialect: dialect.task_of(slow.result(dialect.send, dialect.message("go", dialect.immediately)))
            for dialect in (V1, V03)}
    subscriptions = {dialect: slow.send(dialect.subscribe, {"id": task["id"]}) for dialect, task in sent.items()}
    for dialect, msg_id in subscriptions.items():
        kind, final = dialect.item(slow.response(msg_id)["result"])
        assert kind == "statusUpdate" and final["status"]["state"] == dialect.state("completed")
        items = [dialect.item(item) for item in slow.items(msg_id)]
        assert items[0][0] == "task" and items[0][1]["id"] == sent[dialect]["id"] and items[-1] == (kind, final)
        chunks = "".join(p["artifact"]["parts"][0]["text"] for k, p in items if k == "artifactUpdate")
        assert chunks.endswith("chunk 4;")


# -- 4. multi-turn --------------------------------------------------------------------------
@DIALECTS
@pytest.mark.parametrize("resume_by", ["taskId", "contextId"])
def test_the_answer_to_a_question_resumes_the_same_task(servers, dialect, resume_by):
    asking = servers["asking"]
    first = dialect.task_of(asking.result(dialect.send, dialect.message("Summarize a file")))
    assert first["status"]["state"] == dialect.state("input-required")
    assert first["status"]["message"]["parts"] == [dialect.part("Which file?")]
    reference = {"taskId": first["id"]} if resume_by == "taskId" else {"contextId": first["contextId"]}
    second = dialect.task_of(asking.result(dialect.send, dialect.message("notes.md", **reference)))
    assert (second["id"], second["contextId"]) == (first["id"], first["contextId"])
    assert second["status"]["state"] == dialect.state("completed")
    assert dialect.text(second) == ["Summarize a file", "Which file?", "notes.md", "Reading notes.md."]
    assert [m["role"] for m in second["history"]] == [dialect.role(r) for r in ("user", "agent") * 2]
    assert asking.result(dialect.get, {"id": first["id"]})["history"] == second["history"]


# -- 5. eviction ----------------------------------------------------------------------------
def test_the_oldest_finished_tasks_go_at_the_cap_and_live_ones_stay(servers):
    evicting = servers["asking"]  # CLEVERAGENTS_MAX_TERMINAL_TASKS=5
    live = V1.task_of(evicting.result("SendMessage", V1.message("hi")))
    finished = []
    for _ in range(8):
        task = V1.task_of(evicting.result("SendMessage", V1.message("hi")))
        V1.task_of(evicting.result("SendMessage", V1.message("a.py", taskId=task["id"])))
        finished.append(task["id"])
    listed = evicting.result("ListTasks", {"pageSize": 100})
    assert listed["totalSize"] == 6
    assert {t["id"] for t in listed["tasks"]} == {live["id"], *finished[3:]}
    for gone in finished[:3]:
        assert evicting.error("GetTask", {"id": gone})["code"] == -32001
    assert evicting.result("GetTask", {"id": live["id"]})["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


# -- 6. restart -----------------------------------------------------------------------------
def test_tasks_and_push_configs_survive_a_restart(servers, webhook):
    server = servers["asking"]  # a workspace, not memory
    done = V1.task_of(server.result("SendMessage", V1.message("hi")))
    done = V1.task_of(server.result("SendMessage", V1.message("a.py", taskId=done["id"])))
    waiting = V1.task_of(server.result("SendMessage", V1.message("hi")))
    config = server.result("CreateTaskPushNotificationConfig", {
        "taskId": waiting["id"], "url": webhook.url("/restart"), "token": "tok-restart"})

    servers["asking"] = server = server.restarted()  # the fixture stops the new one
    assert server.result("GetTask", {"id": done["id"]}) == done
    assert server.result("GetTask", {"id": waiting["id"]}) == waiting
    listed = server.result("ListTaskPushNotificationConfigs", {"taskId": waiting["id"]})
    assert listed["configs"] == [config]
    resumed = V1.task_of(server.result("SendMessage", V1.message("b.py", taskId=waiting["id"])))
    assert V1.text(resumed)[-1] == "Reading b.py." and resumed["status"]["state"] == "TASK_STATE_COMPLETED"
    posts = webhook.wait_for("/restart", 3)  # the stored config still gets the updates: working, reply, done
    assert posts[0][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert posts[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert all(headers[TOKEN_HEADER] == "tok-restart" for headers, _ in posts)
    assert (server.cwd / ".cleveragents").is_dir()


# -- 7. push notifications ------------------------------------------------------------------
def test_webhooks_get_each_update_with_their_token_in_their_dialect(servers, webhook):
    asking = servers["asking"]
    sent = asking.result("SendMessage", V1.message("hi", {
        "taskPushNotificationConfig": {"url": webhook.url("/v1"), "token": "tok-1"}}))
    task = V1.task_of(sent)
    first_turn = webhook.wait_for("/v1", 2)
    assert [V1.item(body)[1]["status"]["state"] for _, body in first_turn] == [
        "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]

    asking.result("tasks/pushNotificationConfig/set", {
        "taskId": task["id"], "pushNotificationConfig": {"url": webhook.url("/v03"), "token": "tok-2"}})
    asking.result("message/send", V03.message("a.py", taskId=task["id"]))
    v1_posts = webhook.wait_for("/v1", 5)  # the first turn's two, then working, the reply, done
    assert V1.item(v1_posts[-1][1])[1]["status"]["state"] == "TASK_STATE_COMPLETED"
    v03_posts = webhook.wait_for("/v03", 3)  # working again, the reply's artifact, the final status
    second_turn = [V03.item(body) for _, body in v03_posts]
    assert second_turn[0][0] == "statusUpdate" and second_turn[0][1]["status"]["state"] == "working"
    artifacts = [p["artifact"]["parts"] for kind, p in second_turn if kind == "artifactUpdate"]
    assert artifacts == [[V03.part("Reading a.py.")]]
    kind, last = second_turn[-1]
    assert kind == "statusUpdate" and last["status"]["state"] == "completed" and last["final"] is True
    assert {headers[TOKEN_HEADER] for headers, _ in v1_posts} == {"tok-1"}
    assert {headers[TOKEN_HEADER] for headers, _ in v03_posts} == {"tok-2"}
