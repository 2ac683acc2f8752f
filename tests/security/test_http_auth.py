"""Auth bypass attempts on every HTTP route, on real uvicorn (127.0.0.1).

The routes come from ``build_app`` itself, so a route added later is attacked too,
and the set of public routes is pinned: only the two agent cards (at the root and
under the prefix) and ``/healthz`` (a constant body, for load balancers) answer
without a credential. Path tricks go out on a raw socket, so no client library
cleans them up on the way.
"""

from __future__ import annotations

import asyncio
import base64

import httpx
import pytest
from starlette.routing import Route

from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app, slash_forms
from tests.contract.runners import UvicornServer

TOKEN = "tok-3f9a7c1e5b2d4a6f8e0c"
KEY = "key-9b8a7c6d5e4f3a2b1c0d"
# The cards, and the JWK Set of the keys that sign them (public keys, as public as the cards).
CARDS = {"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/jwks.json"}
HTTP_METHODS = ("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS")


def _wrong_credentials() -> list[tuple[dict[str, str], str]]:
    """(headers, query) pairs that must all be refused."""
    basic = base64.b64encode(f"user:{TOKEN}".encode()).decode()
    return [
        ({}, ""),
        ({"Authorization": "Bearer wrong"}, ""),
        ({"Authorization": "Bearer " + TOKEN[:-1]}, ""),  # a prefix of the real one
        ({"Authorization": "Bearer " + TOKEN[:1]}, ""),
        ({"Authorization": "Bearer " + TOKEN + "x"}, ""),
        ({"Authorization": "Bearer"}, ""),
        ({"Authorization": TOKEN}, ""),  # no scheme
        ({"Authorization": "Bearer" + TOKEN}, ""),  # no space
        ({"Authorization": "Token " + TOKEN}, ""),
        ({"Authorization": "Basic " + basic}, ""),
        ({"Authorization": "Bearer " + KEY}, ""),  # an API key is no bearer token
        ({"X-API-Key": ""}, ""),
        ({"X-API-Key": KEY[:-1]}, ""),
        ({"X-API-Key": TOKEN}, ""),
        ({"Api-Key": KEY}, ""),  # another header name
        ({"Cookie": f"token={TOKEN}; api_key={KEY}"}, ""),
        ({}, f"token={TOKEN}"),
        ({}, f"access_token={TOKEN}"),
        ({}, f"api_key={KEY}"),
        ({}, f"Authorization=Bearer%20{TOKEN}"),
        ({"X-HTTP-Method-Override": "GET", "X-Method-Override": "GET", "X-HTTP-Method": "GET"}, ""),
        ({"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1", "Forwarded": "for=127.0.0.1"}, ""),
    ]


def _right_credentials() -> list[dict[str, str]]:
    # The scheme is case-insensitive (RFC 9110), so these are the same credential.
    return [{"Authorization": f"Bearer {TOKEN}"}, {"Authorization": f"bearer {TOKEN}"},
            {"Authorization": f"BEARER  {TOKEN}"}, {"X-API-Key": KEY}]


def _concrete(path: str) -> str:
    return path.replace("{id}", "task-1").replace("{push_id}", "push-1")


@pytest.fixture(params=["", "/api"], ids=["root", "prefix"])
async def served(request, tmp_path):
    app = build_app(settings=Settings(workspace=tmp_path, memory=True, auth_tokens=(TOKEN,), api_keys=(KEY,)),
                    prefix=request.param)
    routes = []
    for route in app.routes:
        assert isinstance(route, Route), f"a route this test cannot enumerate: {route!r}"
        for method in sorted(route.methods - {"HEAD"}):
            routes += [(method, _concrete(path)) for path in slash_forms(route.path)]
    server = UvicornServer(app)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        yield {"client": client, "routes": routes, "prefix": request.param, "url": server.url}
    await server.stop()


async def _status(client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str],
                  query: str = "") -> tuple[int, bytes]:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}' if method in ("POST", "PUT", "PATCH") else None
    url = path + ("?" + query if query else "")
    async with client.stream(method, url, headers={"Content-Type": "application/json", **headers},
                             content=body) as response:
        head = b""
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            head = await response.aread()
        return response.status_code, head


def _public(prefix: str) -> set[str]:
    """The cards (and their keys) at the root and under the prefix; ``/healthz`` under the prefix; each
    with or without a trailing slash (every route has both forms)."""
    paths = CARDS | {prefix + card for card in CARDS} | {prefix + "/healthz"}
    return paths | {path + "/" for path in paths}


async def test_only_the_cards_and_healthz_answer_without_a_credential(served):
    client, prefix = served["client"], served["prefix"]
    public = set()
    for method, path in served["routes"]:
        status, _ = await _status(client, method, path, {})
        if status != 401:
            public.add(path)
    assert public == _public(prefix)


async def test_every_protected_route_refuses_every_wrong_credential(served):
    client, prefix = served["client"], served["prefix"]
    protected = [(m, p) for m, p in served["routes"] if p not in _public(prefix)]
    assert len(protected) >= 14
    checks = [(method, path, headers, query) for method, path in protected for headers, query in _wrong_credentials()]
    statuses = [await _status(client, m, p, h, q) for m, p, h, q in checks]  # in turn: faster than at once
    for (method, path, headers, query), (status, body) in zip(checks, statuses, strict=True):
        assert status == 401, (method, path, headers, query, status)
        assert TOKEN not in body.decode() and KEY not in body.decode()
    for method, path in protected:  # the control: the right credential gets past the check
        for headers in _right_credentials():
            status, _ = await _status(client, method, path, headers)
            assert status != 401, (method, path, headers)


async def test_a_401_says_how_to_authenticate_and_nothing_else(served):
    response = await served["client"].post(served["prefix"] + "/a2a", json={"jsonrpc": "2.0", "id": 9,
                                                                           "method": "_cleveragents/health/check"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith('Bearer realm="a2a"')
    body = response.json()
    assert body["id"] == 9 and "result" not in body
    assert body["error"]["code"] == -32002 and body["error"]["data"] == {"schemes": ["bearerAuth", "apiKey"]}


@pytest.mark.parametrize("method", [["ListTasks"], {"name": "ListTasks"}, 7, None], ids=["list", "object", "number", "null"])
async def test_a_refused_request_whose_method_is_no_string_gets_its_401(served, method):
    """The refusal answers in the request's dialect, worked out from its method: one that
    is no string (a list can't even be looked up) must not turn the 401 into a 500."""
    response = await served["client"].post(served["prefix"] + "/a2a", json={"jsonrpc": "2.0", "id": 9, "method": method})
    assert response.status_code == 401
    body = response.json()
    assert body["id"] == 9 and body["error"]["data"] == {"schemes": ["bearerAuth", "apiKey"]}, body


async def _raw(url: str, request_line: str, headers: str = "") -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    body = b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}'
    method = request_line.split(" ", 1)[0]
    extra = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if method == "POST" else ""
    writer.write(f"{request_line}\r\nHost: {host}:{port}\r\n{extra}{headers}Connection: close\r\n\r\n".encode())
    if method == "POST":
        writer.write(body)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return int(data.split(b" ", 2)[1]), data


PATH_TRICKS = [
    "//a2a", "/a2a/", "/%2e/a2a", "/./a2a", "/a2a%2f", "/A2A", "/a2a%00", "/a2a;x", "/a2a?x=/.well-known/agent.json",
    "/.well-known/../a2a", "/.well-known/%2e%2e/a2a", "/.well-known/agent-card.json/../../a2a",
    "/.well-known%2fagent-card.json", "/healthz/../a2a", "/healthz%2f..%2fa2a", "/tasks/x%2f..%2f..%2fa2a",
    "/tasks/..%2ftasks", "//tasks", "/tasks/", "/./tasks", "/%74asks", "/events/", "/%65vents", "/message:send/",
    "/message%3asend", "/extendedAgentCard/", "/EXTENDEDAGENTCARD",
]


async def test_path_tricks_never_reach_a_protected_handler(served):
    url, prefix = served["url"], served["prefix"]
    for trick in PATH_TRICKS:
        path = prefix + trick
        for method in ("GET", "POST"):
            for headers in ("", "X-HTTP-Method-Override: GET\r\n", "X-Original-URL: /healthz\r\n"
                                "X-Rewrite-URL: /.well-known/agent.json\r\n"):
                status, data = await _raw(url, f"{method} {path} HTTP/1.1", headers)
                text = data.decode("latin-1")
                if status in (301, 302, 307, 308):  # a redirect leads to a route that checks again
                    location = next(line.split(":", 1)[1].strip() for line in text.split("\r\n")
                                    if line.lower().startswith("location:"))
                    target = httpx.URL(location).raw_path.decode()
                    status, data = await _raw(url, f"{method} {target} HTTP/1.1")
                    text = data.decode("latin-1")
                if status == 200:  # only a public route answers, with what it always says
                    assert '"skills"' in text or text.endswith('{"status":"ok"}'), (method, path, text[:300])
                    continue
                assert status in (400, 401, 404, 405), (method, path, headers, status, text[:300])
                assert '"result"' not in text and '"tasks"' not in text


async def test_absolute_form_and_odd_request_targets_are_refused(served):
    url, prefix = served["url"], served["prefix"]
    for target in [f"{url}{prefix}/a2a", f"http://evil.example{prefix}/a2a", f"{prefix}/a2a#x"]:
        status, data = await _raw(url, f"POST {target} HTTP/1.1")
        assert status in (400, 401, 404), (target, status)
        assert b'"result"' not in data


async def test_a_caller_without_a_credential_is_not_read_to_the_end(served):
    """Only a little of an unauthenticated body is read (to echo its id): a big one
    is answered 401 at once, with no need to hold 16 MiB for a stranger."""
    client, prefix = served["client"], served["prefix"]

    async def body():
        yield b'{"jsonrpc":"2.0","id":5,"method":"ListTasks","params":{"x":"'
        for _ in range(20 * 16):  # 20 MiB in 64 KiB chunks: past the limit of a caller that is let in
            yield b"x" * 65536

    response = await client.post(prefix + "/a2a", content=body(), headers={"Content-Type": "application/json"})
    assert response.status_code == 401
    declared = await client.post(prefix + "/a2a", content=b"{}", headers={"Content-Length": "2"})
    assert declared.status_code == 401
    big = await client.post(prefix + "/a2a", content=b" " * (17 * 1024 * 1024),
                            headers={"Authorization": f"Bearer {TOKEN}"})
    assert big.status_code == 413  # the limit for a caller that is let in is unchanged


async def test_the_public_routes_say_nothing_secret(served, tmp_path):
    client, prefix = served["client"], served["prefix"]
    for path in sorted(_public(prefix)):
        response = await client.get(path)
        unsigned = path.rstrip("/").endswith("/jwks.json")  # these cards are not signed: no keys to publish
        assert response.status_code == (404 if unsigned else 200), path
        for secret in (TOKEN, KEY, str(tmp_path)):
            assert secret not in response.text, (path, secret)
