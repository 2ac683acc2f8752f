"""Server-side request forgery through push notifications.

A remote caller names the webhook, so it could make the server post into its own
loopback services, the private network or a cloud metadata service. Such URLs are
refused when the config is made (both dialects, with the reason in ``data``), and
checked again at each delivery, which connects to the address it checked: a DNS
answer that changes between the two, or a redirect, reaches nothing. A webhook that
takes its time answering holds up only deliveries, never the server's other work.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from cleveragents.domain.push_policy import PushTargetRefused
from cleveragents.infra.push_targets import PushTargets
from cleveragents.infra.webhooks import post_json
from tests.dripping_webhook import DrippingWebhook
from tests.security.http_process import HttpProcess

V1 = {"A2A-Version": "1.0"}


class Receiver(http.server.ThreadingHTTPServer):
    """A webhook on 127.0.0.1 that records every request: (path, Host header)."""

    def __init__(self, status: int = 200, location: str | None = None):
        self.seen: list[tuple[str, str]] = []
        self.status, self.location = status, location
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def _any(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        server: Receiver = self.server  # type: ignore[assignment]
        server.seen.append((self.path, self.headers.get("host", "")))
        self.send_response(server.status)
        if server.location:
            self.send_header("Location", server.location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET = _any  # noqa: N815 - the handler's API

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def rpc(method: str, params: dict, msg_id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def message(text: str) -> dict:
    return {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}


def refused_urls(port: int) -> list[tuple[str, set[str]]]:
    """(url, the reasons it may be refused for)."""
    return [
        (f"http://127.0.0.1:{port}/hook", {"loopback"}),
        (f"http://localhost:{port}/hook", {"loopback"}),
        (f"http://[::1]:{port}/hook", {"loopback"}),
        (f"http://2130706433:{port}/hook", {"loopback"}),  # 127.0.0.1 as one number
        (f"http://[::ffff:127.0.0.1]:{port}/hook", {"loopback"}),
        (f"http://0.0.0.0:{port}/hook", {"unspecified"}),
        ("http://169.254.169.254/latest/meta-data/iam/", {"metadata"}),
        ("http://[fd00:ec2::254]/latest/meta-data/", {"metadata"}),
        ("http://100.100.100.200/latest/meta-data/", {"metadata"}),
        ("http://169.254.1.1/", {"link_local"}),
        ("http://10.1.2.3/hook", {"private"}),
        ("http://192.168.0.10/hook", {"private"}),
        ("http://[fd12::1]/hook", {"private"}),
        ("http://224.0.0.1/hook", {"multicast"}),
        ("http://100.64.0.1/hook", {"not_global", "private"}),
        ("http://240.0.0.1/hook", {"reserved", "private"}),
    ]


def test_webhooks_on_private_addresses_are_refused_when_the_config_is_made(identity, receiver):
    with HttpProcess(identity, "--auth-token", "tok-push") as server, \
            httpx.Client(base_url=server.url, timeout=20, headers=server.auth("tok-push")) as client:
        task = client.post("/a2a", json=rpc("SendMessage", {"message": message("first")}), headers=V1).json()
        task_id = task["result"]["task"]["id"]
        for url, reasons in refused_urls(receiver.port):
            v1 = client.post("/a2a", headers=V1, json=rpc("CreateTaskPushNotificationConfig",
                                                          {"taskId": task_id, "url": url, "token": "t"})).json()
            assert v1["error"]["code"] == -32602, (url, v1)
            info, bad_request = v1["error"]["data"]
            assert info["reason"] == "INVALID_PARAMS" and info["metadata"]["reason"] in reasons, (url, info)
            assert bad_request["fieldViolations"][0]["field"] == "url"
            v03 = client.post("/a2a", json=rpc("tasks/pushNotificationConfig/set", {
                "taskId": task_id, "pushNotificationConfig": {"url": url}})).json()
            assert v03["error"]["code"] == -32602 and v03["error"]["data"]["reason"] in reasons, (url, v03)
            assert v03["error"]["data"]["errors"][0]["loc"] == ["pushNotificationConfig", "url"]
            rest = client.post(f"/tasks/{task_id}/pushNotificationConfigs", json={"url": url}, headers=V1)
            assert rest.status_code == 400, (url, rest.text)
        # A message that carries such a config is refused before any task is made.
        sent = client.post("/a2a", headers=V1, json=rpc("SendMessage", {
            "message": message("second"), "configuration": {"taskPushNotificationConfig": {
                "url": f"http://127.0.0.1:{receiver.port}/hook"}}})).json()
        assert sent["error"]["code"] == -32602, sent
        assert sent["error"]["data"][1]["fieldViolations"][0]["field"] == "configuration.taskPushNotificationConfig.url"
        streamed = client.post("/a2a", json=rpc("message/stream", {
            "message": {**message("third"), "kind": "message", "role": "user",
                        "parts": [{"kind": "text", "text": "third"}]},
            "configuration": {"pushNotificationConfig": {"url": "http://169.254.169.254/"}}}))
        # A refused stream is an event stream whose one event is the error.
        assert streamed.headers["content-type"].startswith("text/event-stream"), streamed.text
        (error,) = [json.loads(line[5:])["error"] for line in streamed.text.splitlines() if line.startswith("data:")]
        assert error["code"] == -32602 and error["data"]["reason"] == "metadata"
        tasks = client.post("/a2a", json=rpc("ListTasks", {}), headers=V1).json()["result"]["tasks"]
        assert [t["id"] for t in tasks] == [task_id]
        configs = client.post("/a2a", headers=V1, json=rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}))
        assert configs.json()["result"]["configs"] == []
    time.sleep(0.3)
    assert receiver.seen == []


def test_an_allowed_network_is_reached(identity, receiver):
    with HttpProcess(identity, "--auth-token", "tok-push", "--push-allow-network", "127.0.0.1/32") as server, \
            httpx.Client(base_url=server.url, timeout=20, headers={**server.auth("tok-push"), **V1}) as client:
        hook = f"http://127.0.0.1:{receiver.port}/hook"
        sent = client.post("/a2a", json=rpc("SendMessage", {"message": message("hi"), "configuration": {
            "taskPushNotificationConfig": {"url": hook}}})).json()
        assert "result" in sent, sent
        metadata = client.post("/a2a", json=rpc("SendMessage", {"message": message("md"), "configuration": {
            "taskPushNotificationConfig": {"url": "http://169.254.169.254/"}}})).json()
        assert metadata["error"]["data"][0]["metadata"]["reason"] == "metadata"  # still refused
        deadline = time.monotonic() + 10
        while not receiver.seen:
            assert time.monotonic() < deadline, "no push arrived"
            time.sleep(0.05)
        assert receiver.seen[0] == ("/hook", f"127.0.0.1:{receiver.port}")


def test_webhooks_that_never_finish_answering_hold_up_nothing_else(identity):
    """A caller points its tasks' pushes at many webhooks that answer a byte at a time.
    While the server waits on them, its other work (here the diagnostics, which read the
    workspace in a worker thread, and the check of a new config) goes on as before."""
    hooks = 40  # more than any default pool of worker threads holds
    webhook = DrippingWebhook(every=0.5)
    try:
        with HttpProcess(identity, "--auth-token", "tok-push", "--push-allow-network", "127.0.0.1/32") as server, \
                httpx.Client(base_url=server.url, timeout=30, headers={**server.auth("tok-push"), **V1}) as client:

            def send(n: int) -> dict:
                return client.post("/a2a", json=rpc("SendMessage", {"message": message(f"m{n}"), "configuration": {
                    "taskPushNotificationConfig": {"url": f"{webhook.url}/hook/{n}"}}})).json()

            with ThreadPoolExecutor(8) as pool:
                assert all("result" in sent for sent in pool.map(send, range(hooks)))
            deadline = time.monotonic() + 10
            while webhook.accepted < 4:
                assert time.monotonic() < deadline, f"{webhook.accepted} pushes arrived"
                time.sleep(0.05)
            time.sleep(0.5)  # the rest of the deliveries are under way, or waiting their turn
            started = time.monotonic()
            answer = client.post("/a2a", json=rpc("_cleveragents/diagnostics/run", {}), timeout=5).json()
            checks = {check["name"]: check["status"] for check in answer["result"]["checks"]}
            assert checks["workspace"] == "ok", answer
            assert time.monotonic() - started < 2, "the diagnostics waited on the webhooks"
            started = time.monotonic()  # and a new config is checked and stored at once
            assert "result" in send(hooks), "a config made while the deliveries wait"
            assert time.monotonic() - started < 2, "a new config waited on the webhooks"
    finally:
        webhook.close()


# -- at delivery -----------------------------------------------------------------------
def test_delivery_checks_again_and_connects_to_the_address_it_checked(receiver):
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        """A name that resolves to an allowed address once, then to a private one."""
        lookups.append(host)
        return ["127.0.0.1"] if len(lookups) == 1 else ["10.0.0.1"]

    targets = PushTargets(["127.0.0.1/32"], resolve=rebinding)
    url = f"http://hook.invalid:{receiver.port}/rebound"
    # One lookup per delivery, and the connection goes to its answer: the system can't
    # resolve hook.invalid, so the post only arrives if no second lookup was made.
    assert post_json(url, {"n": 1}, {}, timeout=5, targets=targets) is None
    assert lookups == ["hook.invalid"] and receiver.seen == [("/rebound", f"hook.invalid:{receiver.port}")]
    problem = post_json(url, {"n": 2}, {}, timeout=5, targets=targets)
    assert problem is not None and "10.0.0.1" in problem and "private" in problem
    assert len(receiver.seen) == 1  # the rebound name reached nothing
    # A config stored while a network was allowed is refused once it no longer is.
    assert "loopback" in post_json(f"http://127.0.0.1:{receiver.port}/later", {}, {}, timeout=5,
                                   targets=PushTargets())
    assert len(receiver.seen) == 1


def test_redirects_are_not_followed(receiver):
    bouncer = Receiver(status=307, location=f"http://127.0.0.1:{receiver.port}/inner")
    try:
        for status in (301, 302, 303, 307, 308):
            bouncer.status = status
            problem = post_json(f"http://127.0.0.1:{bouncer.port}/outer", {}, {}, timeout=5,
                                targets=PushTargets(["127.0.0.1/32"]))
            assert problem is not None and str(status) in problem
        bouncer.location = "http://169.254.169.254/latest/meta-data/"
        assert post_json(f"http://127.0.0.1:{bouncer.port}/outer", {}, {}, timeout=5,
                         targets=PushTargets(["127.0.0.1/32"])) is not None
    finally:
        bouncer.close()
    assert receiver.seen == [] and len(bouncer.seen) == 6


def test_the_policy_refuses_every_non_public_address():
    targets = PushTargets(resolve=lambda host, port: ["93.184.215.14"])
    assert targets.check("https://hooks.example.com/x").addresses == ("93.184.215.14",)
    for url, reasons in refused_urls(9):
        if url.startswith(("http://localhost", "http://2130706433")):
            continue  # names: the test's resolver answers a public address for them
        with pytest.raises(PushTargetRefused) as refused:
            targets.check(url)
        assert refused.value.reason in reasons, url
        assert json.dumps(refused.value.data)  # plain data for the wire
    mixed = PushTargets(resolve=lambda host, port: ["93.184.215.14", "10.0.0.1"])
    with pytest.raises(PushTargetRefused):  # any refused address refuses the URL
        mixed.check("http://hooks.example.com/")
    for url in ("ftp://x/", "file:///etc/passwd", "http:///x", "http://x:99999/"):
        with pytest.raises(PushTargetRefused):
            targets.check(url)
