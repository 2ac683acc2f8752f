"""Secrets never reach the log (stderr or stdout), even at DEBUG.

One real HTTP server (a subprocess on 127.0.0.1) runs with a bearer token, API keys,
an OpenAI API key and an outbound A2A token in its environment, and a local stand-in
for the OpenAI endpoint and for a push webhook. A session uses all of them: calls
with the right and wrong credentials, tasks the OpenAI actor answers (the key goes
out in its requests), a push config with a token (the token goes out to the
webhook). Everything the server wrote to stderr is then searched for every secret.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time

import httpx
import pytest

BEARER = "bearer-5ecret-6d1f0a"
API_KEY = "apikey-5ecret-91c2e7"
OPENAI_KEY = "sk-openai-5ecret-44b8d3"
A2A_TOKEN = "a2a-5ecret-0e7c55"
PUSH_TOKEN = "push-5ecret-a3f912"
HOOK_SECRET = "hook-url-5ecret-7d2b"  # webhook URLs often carry their own secret
SECRETS = (BEARER, API_KEY, OPENAI_KEY, A2A_TOKEN, PUSH_TOKEN, HOOK_SECRET)


class _Fake(http.server.BaseHTTPRequestHandler):
    """``/v1/chat/completions`` answers one streamed line; ``/hook`` takes pushes."""

    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's API
        self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
        if self.path.endswith("/chat/completions"):
            chunk = {"choices": [{"index": 0, "delta": {"content": "hello from the model"}}]}
            body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
        else:
            body = b"{}"
            self.send_response(500 if self.path.startswith("/fail") else 200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def fake_endpoints():
    _Fake.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _wait(predicate, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_no_secret_reaches_stderr_at_debug(tmp_path, fake_endpoints):
    ws = tmp_path / "ws"
    (ws / ".cleveragents").mkdir(parents=True)
    (ws / ".cleveragents" / "config.toml").write_text('[defaults]\ndefault_actor = "openai/gpt-test"\n')
    env = {**os.environ, "OPENAI_API_KEY": OPENAI_KEY, "CLEVERAGENTS_API_KEYS": API_KEY,
           "CLEVERAGENTS_A2A_TOKEN": A2A_TOKEN, "CLEVERAGENTS_OPENAI_BASE_URL": fake_endpoints + "/v1",
           "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "PYTHONASYNCIODEBUG": "1",
           "CLEVERAGENTS_PUSH_ALLOWED_NETWORKS": "127.0.0.1/32"}  # the webhooks are local
    env.pop("CLEVERAGENTS_USER_CONFIG", None)
    stderr_path, stdout_path = tmp_path / "stderr.log", tmp_path / "stdout.log"
    with open(stderr_path, "wb") as stderr, open(stdout_path, "wb") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "cleveragents.transports.http", "--workspace", str(ws), "--state-dir",
             str(tmp_path / "state"), "--port", "0", "--log-level", "DEBUG", "--auth-token", BEARER],
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env)
    try:
        _wait(lambda: b"listening on" in stderr_path.read_bytes() or process.poll() is not None)
        port = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", stderr_path.read_bytes()).group(1).decode()
        url = f"http://127.0.0.1:{port}"
        good = {"Authorization": f"Bearer {BEARER}", "A2A-Version": "1.0"}
        with httpx.Client(base_url=url, timeout=20) as client:
            for headers in ({"Authorization": f"Bearer {BEARER[:-1]}"}, {"X-API-Key": API_KEY + "x"}, {}):
                assert client.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"},
                                   headers=headers).status_code == 401
            assert client.get("/tasks", headers={"X-API-Key": API_KEY}).status_code == 200
            # A client that puts a secret in the URL is refused, and the URL is not logged either.
            assert client.get(f"/tasks?access_token={BEARER}&api_key={API_KEY}").status_code == 401
            message = {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]}
            push = {"url": fake_endpoints + "/hook", "token": PUSH_TOKEN}
            failing = {"url": f"{fake_endpoints}/fail/{HOOK_SECRET}?sig={HOOK_SECRET}", "token": PUSH_TOKEN}
            sent = client.post("/a2a", headers=good, json={"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
                "message": message, "configuration": {"taskPushNotificationConfig": push}}}).json()
            assert "result" in sent, sent
            task = sent["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            created = client.post("/a2a", headers=good, json={"jsonrpc": "2.0", "id": 3,
                                  "method": "CreateTaskPushNotificationConfig",
                                  "params": {"taskId": task["id"], **push}}).json()
            assert created["result"]["token"] == PUSH_TOKEN  # the owner reads back their own config
            failed_push = client.post("/a2a", headers=good, json={"jsonrpc": "2.0", "id": 5, "method": "SendMessage",
                                      "params": {"message": {**message, "messageId": "m-2"},
                                                 "configuration": {"taskPushNotificationConfig": failing}}}).json()
            assert "result" in failed_push, failed_push
            client.post("/a2a", headers=good, json={"jsonrpc": "2.0", "id": 4, "method": "GetTask",
                                                    "params": {"id": "missing"}})
            client.post("/a2a", headers=good, content=b"{not json")
        _wait(lambda: any(seen["path"] == "/hook" for seen in _Fake.seen))
        _wait(lambda: sum(seen["path"].startswith("/fail") for seen in _Fake.seen) >= 2)  # a retry was logged
    finally:
        process.terminate()
        process.wait(15)
    model_calls = [seen for seen in _Fake.seen if seen["path"].endswith("/chat/completions")]
    pushes = [seen for seen in _Fake.seen if seen["path"] == "/hook"]
    assert model_calls and model_calls[0]["authorization"] == f"Bearer {OPENAI_KEY}"  # the secrets were used
    assert pushes and PUSH_TOKEN in pushes[0].values()
    log = stderr_path.read_text(errors="replace") + stdout_path.read_text(errors="replace")
    assert " DEBUG " in log and "push to a webhook" in log, log[:2000]  # DEBUG, and the failing push was logged
    leaked = [secret for secret in SECRETS if secret in log]
    assert leaked == [], f"secrets in the log: {leaked}"


QUERY_SECRETS = {"access_token": "q-access-5ecret-1", "token": "q-token-5ecret-2", "api_key": "q-apikey-5ecret-3",
                 "apiKey": "q-apikey-5ecret-4", "key": "q-key-5ecret-5", "sig": "q-sig-5ecret-6",
                 "X-Amz-Signature": "q-amz-5ecret-7", "password": "q-pass-5ecret-8", "client_secret": "q-client-5ecret-9",
                 "auth": "q-auth-5ecret-10"}
HEADER_SECRETS = {"Authorization": "Bearer h-bearer-5ecret-1", "X-API-Key": "h-apikey-5ecret-2",
                  "Cookie": "session=h-cookie-5ecret-3", "Proxy-Authorization": "Basic aC1iYXNpYy01ZWNyZXQtNA=="}
HEADER_VALUES = ("h-bearer-5ecret-1", "h-apikey-5ecret-2", "h-cookie-5ecret-3", "aC1iYXNpYy01ZWNyZXQtNA")


def test_credentials_in_urls_and_headers_reach_no_output_at_debug(identity):
    """The access log and every DEBUG line of a real server, on stderr and stdout alike,
    while clients send the server's own token and other credentials in URLs and headers."""
    from tests.security.http_process import HttpProcess

    with HttpProcess(identity, "--log-level", "DEBUG", env={"PYTHONASYNCIODEBUG": "1"}) as server:
        token = server.token
        query = "&".join(f"{name}={value}" for name, value in {**QUERY_SECRETS, "token": token}.items())
        with httpx.Client(base_url=server.url, timeout=20) as client:
            for path in ("/tasks", "/a2a", "/events", "/.well-known/agent-card.json", "/nowhere"):
                client.get(f"{path}?{query}", headers=HEADER_SECRETS)
                if path != "/events":  # with the token, a stream that stays open
                    client.get(f"{path}?{query}", headers={"Authorization": f"Bearer {token}"})
            client.post(f"/a2a?{query}", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"},
                        headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"})
            client.post(f"/message:send?{query}", content=b"{broken", headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        time.sleep(0.3)
    out, err = server.stdout(), server.stderr()
    assert "GET /tasks?" in err and " DEBUG " in err, err[-2000:]  # the access log was written, at DEBUG
    assert err.count(token) == 1  # the notice that hands it out, and nothing else
    secrets = [*QUERY_SECRETS.values(), *HEADER_VALUES]
    leaked = [secret for secret in secrets if secret in out + err]
    assert leaked == [], leaked
    assert out == ""  # HTTP mode writes nothing on stdout
