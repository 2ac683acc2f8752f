"""PushSender against a real local webhook (a stdlib HTTP server)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cleveragents.a2a.push import TOKEN_HEADER, PushSender
from cleveragents.domain.task import PushConfig, TaskState, TaskStatus, TaskStatusUpdate
from cleveragents.infra.push_targets import PushTargets
from cleveragents.infra.webhooks import WebhookPoster, post_json
from tests.dripping_webhook import DrippingWebhook

# The test's webhook listens on loopback, which pushes may reach only when allowed.
LOCAL = WebhookPoster(PushTargets(["127.0.0.1/32"]))


@pytest.fixture
def webhook():
    received: list[tuple[dict[str, str], dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((dict(self.headers), body))
            self.send_response(200 if self.path != "/broken" else 500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()
    server.server_close()


def update(state: TaskState) -> TaskStatusUpdate:
    return TaskStatusUpdate("t1", "c1", TaskStatus(state, "2026-01-01T00:00:00.000Z"), final=state.terminal)


async def wait_for(received: list, count: int) -> None:
    for _ in range(200):
        if len(received) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(received)} posts, expected {count}")


async def test_items_go_in_order_with_the_token_in_the_configs_dialect(webhook):
    url, received = webhook
    sender = PushSender(LOCAL)
    v1 = PushConfig("p1", "t1", url + "/v1", token="tok-1", authentication={"scheme": "Bearer", "credentials": "xyz"})
    v03 = PushConfig("p2", "t1", url + "/v03", token="tok-2", metadata={"dialect": "0.3"})
    for state in (TaskState.WORKING, TaskState.COMPLETED):
        sender.deliver(v1, update(state))
        sender.deliver(v03, update(state))
    await wait_for(received, 4)
    await sender.aclose()
    by_path = {}
    for headers, body in received:
        by_path.setdefault(headers[TOKEN_HEADER], []).append(body)
    assert [b["statusUpdate"]["status"]["state"] for b in by_path["tok-1"]] == ["TASK_STATE_WORKING",
                                                                              "TASK_STATE_COMPLETED"]
    assert {headers.get("Authorization") for headers, _ in received if headers[TOKEN_HEADER] == "tok-1"} == {
        "Bearer xyz"}
    assert [(b["kind"], b["status"]["state"], b["final"]) for b in by_path["tok-2"]] == [
        ("status-update", "working", False), ("status-update", "completed", True)]


async def test_a_failing_webhook_is_retried_then_given_up_and_its_worker_ends_when_idle(webhook):
    url, received = webhook
    sender = PushSender(LOCAL, retry_delay=0.01, idle=0.2)
    sender.deliver(PushConfig("p1", "t1", url + "/broken"), update(TaskState.WORKING))
    await wait_for(received, 3)
    await asyncio.sleep(0.5)
    assert len(received) == 3 and sender._workers == {}  # three attempts; no worker left behind
    await sender.aclose()


async def test_unreachable_and_bad_urls_are_reported_not_raised():
    assert post_json("ftp://example.invalid/x", {}, {}) is not None
    assert post_json("http://127.0.0.1:9/hook", {}, {}, timeout=2) is not None  # loopback: refused
    assert await LOCAL("http://127.0.0.1:9/hook", {}, {}) is not None  # allowed, but nobody listens


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_webhook_dribbling_its_answer_is_given_up_at_the_time_limit(scheme):
    """Each byte comes within a read's timeout; the limit is on the whole post. (TLS's
    handshake has a limit of its own in the ssl module: this keeps it checked.)"""
    webhook = DrippingWebhook(every=0.05, lasting=4, scheme=scheme)
    try:
        poster = WebhookPoster(PushTargets(["127.0.0.1/32"]), timeout=0.5)
        started = time.monotonic()
        problem = await poster(webhook.url + "/hook", {}, {})
        assert problem == "no whole answer within 0.5s"
        assert time.monotonic() - started < 1.5
        for _ in range(100):  # and the connection is closed, so its thread is free
            if webhook.cut_off:
                break
            await asyncio.sleep(0.02)
        assert webhook.cut_off == 1
        poster.close()
    finally:
        webhook.close()


async def test_webhook_hosts_slow_to_resolve_hold_up_nothing_else():
    """A caller names the webhook's host, and so how long its lookup takes (a name
    server of its own that never answers). Lookups wait in the pushes' threads, not in
    the threads the server's other work shares. The system resolver can't be made slow
    here: this one waits until the test lets it go."""
    from cleveragents.a2a.push import PushSender

    released = threading.Event()

    def never_answering(host: str, port: int) -> list[str]:
        released.wait(10)
        return ["127.0.0.1"]

    poster = WebhookPoster(PushTargets(["127.0.0.1/32"], resolve=never_answering))
    sender = PushSender(poster, admit=poster.admit)
    admits = [asyncio.ensure_future(sender.admit(PushConfig(f"p{n}", "t1", f"http://hook-{n}.test/"))) for n in range(40)]
    try:
        await asyncio.sleep(0.2)
        await asyncio.wait_for(asyncio.to_thread(lambda: None), 2)  # the shared pool is free
    finally:
        released.set()
        await asyncio.gather(*admits)
        poster.close()
