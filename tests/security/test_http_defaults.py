"""A web page, a rebound DNS name and a careless deployment against ``agents serve --http``
on its defaults, run as root and as an unprivileged user.

- A foreign ``Host`` never names the agent in its cards, and gets 421 everywhere: DNS
  rebinding reaches nothing.
- A cross-origin browser request (no preflight: no Content-Type, or text/plain) never
  runs a method; an allowed origin gets a correct CORS answer.
- JSON-RPC and REST calls need a JSON content type.
- With no credential configured the server makes a token and prints it once;
  ``--no-auth`` works on loopback only, and the network never gets an open server.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import httpx
import pytest

from tests.security.http_process import HttpProcess, raw_request

V1 = {"A2A-Version": "1.0"}
EVIL = "https://evil.example"


def rpc(method: str, params: dict | None = None, msg_id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


def message(text: str) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}


def _nothing_ran(server: HttpProcess, headers: dict[str, str]) -> None:
    """No session, task or plan exists: no refused request ran a method."""
    with httpx.Client(base_url=server.url, timeout=10, headers=headers) as client:
        sessions = client.post("/a2a", json=rpc("session.list")).json()["result"]
        assert sessions["sessions"] == [], sessions
        tasks = client.post("/a2a", json=rpc("ListTasks"), headers=V1).json()["result"]
        assert tasks["tasks"] == [], tasks
        plans = client.post("/a2a", json=rpc("_cleveragents/plan/list")).json()
        assert plans.get("result", {}).get("plans", []) == [], plans
    assert not (server.workspace / "pwned").exists()


# -- cards and Host ---------------------------------------------------------------------
def test_a_foreign_host_header_never_reaches_the_cards(identity):
    with HttpProcess(identity, "--auth-token", "tok-cards") as server:
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            status, answer = raw_request(server.port, f"GET {path} HTTP/1.1\r\nHost: attacker.invalid:4444")
            assert status == 421, answer
            assert b"attacker.invalid" not in answer.split(b"\r\n\r\n", 1)[0]
        # An allowed name and a forwarded host change nothing either: the card names the socket.
        status, _ = raw_request(server.port, f"GET /.well-known/agent.json HTTP/1.1\r\nHost: localhost:{server.port}\r\n"
                                             "X-Forwarded-Host: attacker.invalid\r\nForwarded: host=attacker.invalid")
        assert status == 200
        expected = f"http://127.0.0.1:{server.port}/a2a"
        with httpx.Client(base_url=server.url, timeout=10) as client:
            card = client.get("/.well-known/agent-card.json").json()
            legacy = client.get("/.well-known/agent.json").json()
        assert {i["url"] for i in card["supportedInterfaces"]} == {expected, expected.removesuffix("/a2a")}
        assert legacy["url"] == expected
        assert "attacker" not in json.dumps(card) + json.dumps(legacy)


def test_a_rebound_dns_name_gets_421_before_anything_runs(identity):
    with HttpProcess(identity, "--no-auth") as server:
        for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example", f"localhost.:{server.port}",
                     f"127.0.0.1:{server.port + 1}", "", f"127.0.0.1:{server.port}@evil.example"):
            body = json.dumps(rpc("session.create", {"name": "rebound"})).encode()
            status, answer = raw_request(server.port, f"POST /a2a HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json"
                                                      f"\r\nContent-Length: {len(body)}", body)
            assert status in (400, 421), (host, answer)
            rest = json.dumps(message("rebound")).encode()
            status, answer = raw_request(server.port, f"POST /message:send HTTP/1.1\r\nHost: {host}\r\nContent-Type: "
                                                      f"application/json\r\nContent-Length: {len(rest)}", rest)
            assert status in (400, 421), (host, answer)
        # The loopback names with the bound port are served.
        for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"LOCALHOST:{server.port}"):
            status, _ = raw_request(server.port, f"GET /healthz HTTP/1.1\r\nHost: {host}")
            assert status == 200, host
        _nothing_ran(server, {})


def test_allowed_hosts_and_the_public_url_are_served(identity):
    with HttpProcess(identity, "--auth-token", "tok-hosts", "--public-url", "https://agents.example.com/a2a",
                     "--allowed-host", "internal.example:9000") as server:
        for host, status in (("agents.example.com", 200), ("agents.example.com:443", 200), ("agents.example.com:80", 421),
                             ("internal.example:9000", 200), ("internal.example:9001", 421), ("other.example", 421)):
            assert raw_request(server.port, f"GET /healthz HTTP/1.1\r\nHost: {host}")[0] == status, host
        card = httpx.get(server.url + "/.well-known/agent.json", timeout=10).json()
        assert card["url"] == "https://agents.example.com/a2a"


# -- cross-origin browser requests -----------------------------------------------------
def test_cross_origin_requests_never_run_a_method(identity):
    """What a page can send without a preflight: no Content-Type, or a simple type."""
    run_step = rpc("_cleveragents/plan/use", {"action_name": "run", "arguments": {"command": "touch pwned"}})
    calls = [("/a2a", rpc("session.create", {"name": "evil"})), ("/a2a", run_step), ("/message:send", message("evil")),
             ("/a2a", rpc("SendMessage", message("evil")))]
    with HttpProcess(identity, "--no-auth") as server, httpx.Client(base_url=server.url, timeout=10) as client:
        for path, body in calls:
            raw = json.dumps(body).encode()
            for content_type in (None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                 "multipart/form-data; boundary=x"):
                headers = {"Content-Type": content_type} if content_type else {}
                for origin in ({"Origin": EVIL}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                               {"Sec-Fetch-Site": "same-site"}, {"Origin": f"http://localhost:{server.port + 1}"}):
                    answer = client.post(path, content=raw, headers={**headers, **origin, **V1})
                    assert answer.status_code == 403, (path, content_type, origin, answer.text)
                    assert "access-control-allow-origin" not in answer.headers
                answer = client.post(path, content=raw, headers={**headers, **V1})  # no browser marks: still no JSON
                assert answer.status_code == 415, (path, content_type, answer.text)
            # Even a JSON request from a foreign page, had it passed a preflight.
            answer = client.post(path, json=body, headers={"Origin": EVIL, **V1})
            assert answer.status_code == 403
        preflight = client.options("/a2a", headers={"Origin": EVIL, "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "content-type"})
        assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
        assert client.get("/events", headers={"Origin": EVIL, "Accept": "text/event-stream"}).status_code == 403
        _nothing_ran(server, {})


def test_an_allowed_origin_gets_a_correct_cors_answer(identity):
    origin = "https://app.example"
    with HttpProcess(identity, "--auth-token", "tok-cors", "--cors-origin", origin) as server, \
            httpx.Client(base_url=server.url, timeout=10) as client:
        preflight = client.options("/a2a", headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "authorization, content-type, a2a-version"})
        assert preflight.status_code == 204, preflight.text
        assert preflight.headers["access-control-allow-origin"] == origin
        assert "POST" in preflight.headers["access-control-allow-methods"]
        allowed = {h.strip() for h in preflight.headers["access-control-allow-headers"].lower().split(",")}
        assert {"authorization", "content-type", "a2a-version", "last-event-id", "x-api-key"} <= allowed
        assert "origin" in preflight.headers["vary"].lower()
        answer = client.post("/a2a", json=rpc("ListTasks"), headers={"Origin": origin, **V1, **server.auth("tok-cors")})
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == origin
        refused = client.post("/a2a", json=rpc("ListTasks"), headers={"Origin": origin, **V1})
        assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == origin
        assert "www-authenticate" in refused.headers["access-control-expose-headers"].lower()
        # The allowed origin's simple requests still need JSON.
        plain = client.post("/a2a", content=json.dumps(rpc("ListTasks")), headers={
            "Origin": origin, "Content-Type": "text/plain", **V1, **server.auth("tok-cors")})
        assert plain.status_code == 415
        other = client.options("/a2a", headers={"Origin": origin + ".evil", "Access-Control-Request-Method": "POST"})
        assert other.status_code == 403


# -- content types ---------------------------------------------------------------------
def test_json_rpc_and_rest_calls_need_a_json_content_type(identity):
    with HttpProcess(identity, "--auth-token", "tok-ct") as server, \
            httpx.Client(base_url=server.url, timeout=10, headers={**V1, **server.auth("tok-ct")}) as client:
        body = json.dumps(rpc("ListTasks"))
        for content_type in ("application/json", "application/json; charset=utf-8", "APPLICATION/JSON;charset=UTF-8",
                             "application/a2a+json", "application/a2a+json; charset=utf-8"):
            answer = client.post("/a2a", content=body, headers={"Content-Type": content_type})
            assert answer.status_code == 200 and "result" in answer.json(), (content_type, answer.text)
        for headers in ({}, {"Content-Type": "text/plain"}, {"Content-Type": "application/jsonx"},
                        {"Content-Type": "text/json-ish"}):
            answer = client.post("/a2a", content=body, headers=headers)
            assert answer.status_code == 415 and answer.json()["error"]["code"] == -32005, (headers, answer.text)
        sent = client.post("/message:send", json=message("typed"))
        assert sent.status_code == 200, sent.text
        task_id = sent.json()["task"]["id"]
        for path, content in (("/message:send", json.dumps(message("untyped"))), (f"/tasks/{task_id}:cancel", ""),
                              (f"/tasks/{task_id}/pushNotificationConfigs", "")):
            answer = client.post(path, content=content)
            assert answer.status_code == 415, (path, answer.text)
            assert answer.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
        tasks = client.post("/a2a", json=rpc("ListTasks")).json()["result"]["tasks"]
        assert [t["id"] for t in tasks] == [task_id]  # the untyped send made no task


# -- auth by default -------------------------------------------------------------------
def test_without_a_credential_the_server_makes_a_token_and_prints_it_once(identity):
    with HttpProcess(identity) as server:
        assert server.token and len(server.token) >= 32
        assert server.stderr().count(server.token) == 1
        assert server.stdout() == ""
        with httpx.Client(base_url=server.url, timeout=10, headers=V1) as client:
            assert client.post("/a2a", json=rpc("ListTasks")).status_code == 401
            assert client.get("/tasks").status_code == 401
            assert client.post("/a2a", json=rpc("ListTasks"), headers=server.auth()).status_code == 200
            card = client.get("/.well-known/agent-card.json").json()
            assert "bearerAuth" in card["securitySchemes"]
        health = identity.run([*identity.server_command("cleveragents.cli.main"), "health", "check", "--server",
                               server.url, "--token", server.token], cwd=server.workspace)
        assert health.returncode == 0, health.stderr
    with HttpProcess(identity, "--host", "0.0.0.0", name="wildcard") as exposed:  # the network gets a token too
        assert exposed.token
        assert httpx.post(f"http://127.0.0.1:{exposed.port}/a2a", json=rpc("ListTasks"), timeout=10).status_code == 401


def test_a_made_token_works_in_the_command_the_notice_shows(tmp_path):
    """The notice says ``agents <command> --server URL --token <token>``: a token that
    began with "-" would be read as an option there (base64url has "-" in its alphabet)."""
    from cleveragents.cli.main import build_parser
    from cleveragents.config import Settings
    from cleveragents.transports.http.credentials import credentials_for_serving

    parser = build_parser()
    tokens = {credentials_for_serving(Settings(workspace=tmp_path), "127.0.0.1")[1] for _ in range(2000)}
    assert len(tokens) == 2000 and None not in tokens
    for token in tokens:
        assert len(token) >= 43, token  # at least 256 bits as base64, or more characters
        args = parser.parse_args(["health", "check", "--server", "http://127.0.0.1:1", "--token", token])
        assert args.token == token


def test_no_auth_only_on_loopback(identity):
    agents = [*identity.server_command("cleveragents.cli.main"), "serve", "--http", "--port", "0", "--memory"]
    workspace = identity.directory("refused")
    for extra in (["--no-auth", "--host", "0.0.0.0"], ["--no-auth", "--host", "::"],
                  ["--no-auth", "--host", "192.0.2.1"], ["--no-auth", "--auth-token", "t"]):
        done = identity.run([*agents, "--workspace", str(workspace), *extra], cwd=workspace,
                            stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (extra, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "auth" in done.stderr, done.stderr
    with HttpProcess(identity, "--no-auth") as server:
        assert server.token is None and "token" not in server.stderr()
        answer = httpx.post(server.url + "/a2a", json=rpc("ListTasks"), headers=V1, timeout=10)
        assert answer.status_code == 200


@pytest.mark.parametrize("variable", ["CLEVERAGENTS_AUTH_TOKENS", "CLEVERAGENTS_API_KEYS"])
def test_a_configured_credential_is_used_and_no_token_is_made(identity, variable):
    with HttpProcess(identity, env={variable: "configured-5ecret"}) as server:
        assert server.token is None and "configured-5ecret" not in server.stderr()
        headers = server.auth("configured-5ecret") if variable.endswith("TOKENS") else {"X-API-Key": "configured-5ecret"}
        assert httpx.post(server.url + "/a2a", json=rpc("ListTasks"), headers={**V1, **headers},
                          timeout=10).status_code == 200


# -- an app mounted or served by someone else ------------------------------------------
def _non_loopback_address() -> str | None:
    """This machine's address on its default route, if it has one."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


async def test_an_app_without_a_credential_answers_only_loopback_connections(tmp_path):
    import uvicorn

    from cleveragents import A2A, Agent

    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    for token, status in ((None, 403), ("tok-net", 200)):
        app = A2A(agent=Agent(name="Echo", handler=lambda text: text), auth_token=token).asgi_app(
            workspace=tmp_path, memory=True)
        server = uvicorn.Server(uvicorn.Config(app, host="0.0.0.0", port=0, log_level="warning", lifespan="on"))
        serving = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            headers = {**V1, **({"Authorization": f"Bearer {token}"} if token else {})}
            async with httpx.AsyncClient(timeout=10, headers=headers) as client:
                remote = await client.post(f"http://{address}:{port}/a2a", json=rpc("ListTasks"))
                assert remote.status_code == status, remote.text  # its own address is a host it answers for
                local = await client.post(f"http://127.0.0.1:{port}/a2a", json=rpc("ListTasks"))
                assert local.status_code == 200
        finally:
            server.should_exit = True
            await serving


def test_a2a_serve_refuses_no_auth_off_loopback():
    from cleveragents import A2A, Agent

    published = A2A(agent=Agent(name="Echo", handler=lambda text: text))
    for host in ("0.0.0.0", "::", "192.0.2.1", "example.com"):
        with pytest.raises(ValueError, match="loopback"):
            published.serve(host=host, no_auth=True, memory=True)
    with pytest.raises(ValueError, match="contradicts"):
        A2A(agent=Agent(name="Echo", handler=lambda text: text), auth_token="t").serve(no_auth=True, memory=True)
