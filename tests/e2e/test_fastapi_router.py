"""``A2A.get_router()`` in a FastAPI app on real uvicorn (127.0.0.1), used the usual
way: ``app.include_router(a2a.get_router())`` next to the user's own routes, with the
same routes and auth as ``asgi_app()``, and services that live as long as the app."""

from __future__ import annotations

import gc
import json
import logging

import httpx
import pytest
from fastapi import FastAPI

from cleveragents import A2A, Agent
from cleveragents.infra.state_dir import StateDirOwner
from tests.e2e.test_http_sdk import handler
from tests.e2e.test_http_server import V1, rpc, serving, v1_message


def users_app(a2a: A2A, **settings) -> FastAPI:
    """A user's FastAPI app: our router, and one route of the user's own."""
    app = FastAPI()
    app.include_router(a2a.get_router(**settings))

    @app.get("/users/{name}")
    async def user(name: str) -> dict:
        return {"name": name}

    return app


async def test_the_example_app_serves_cards_json_rpc_rest_and_the_users_route(tmp_path):
    a2a = A2A(agent=Agent(name="Echo", handler=handler), url="http://localhost:8000/a2a")
    async with serving(users_app(a2a, workspace=tmp_path, memory=True)) as (_, client):
        card = (await client.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "Echo" and card["supportedInterfaces"][0]["url"] == "http://localhost:8000/a2a"
        assert (await client.get("/.well-known/agent.json")).json()["protocolVersion"] == "0.3.0"
        sent = (await client.post("/a2a", json=rpc("SendMessage", v1_message("hello")), headers=V1)).json()
        task = sent["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"][0]["text"].endswith("hello")
        assert (await client.get(f"/tasks/{task['id']}")).json()["id"] == task["id"]  # the REST binding
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        assert (await client.get("/users/ada")).json() == {"name": "ada"}


async def test_the_auth_token_guards_our_routes_only(tmp_path):
    a2a = A2A(agent=Agent(name="Echo", handler=handler), auth_token="sk-secret", prefix="/agent")
    async with serving(users_app(a2a, workspace=tmp_path, memory=True)) as (server, client):
        missing = await client.post("/agent/a2a", json=rpc("SendMessage", v1_message("hi")), headers=V1)
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert (await client.get("/agent/tasks")).status_code == 401
        assert (await client.get("/agent/events")).status_code == 401
        card = (await client.get("/agent/.well-known/agent-card.json")).json()  # cards are public
        assert card["supportedInterfaces"][0]["url"] == server.url + "/agent/a2a"
        assert "bearerAuth" in card["securitySchemes"]
        allowed = await client.post("/agent/a2a", json=rpc("SendMessage", v1_message("hi")),
                                    headers={**V1, "Authorization": "Bearer sk-secret"})
        assert allowed.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert (await client.get("/users/ada")).status_code == 200


async def test_the_services_start_and_stop_with_the_fastapi_lifespan(tmp_path, recwarn, caplog):
    # What earlier tests on this worker left unreachable is collected now, not blamed on
    # this one (an unclosed socket's ResourceWarning comes when it is collected).
    gc.collect()
    recwarn.clear()
    state_dir = tmp_path / "state"
    a2a = A2A(agent=Agent(name="Echo", handler=handler))
    caplog.set_level(logging.WARNING)
    async with serving(users_app(a2a, workspace=tmp_path, state_dir=state_dir)) as (_, client):
        # Started at startup, before any request to our routes: the state directory is held.
        assert StateDirOwner(state_dir).try_acquire() is False
        assert (await client.get("/users/ada")).status_code == 200
    owner = StateDirOwner(state_dir)
    try:
        assert owner.try_acquire() is True  # shutdown closed the services and let it go
    finally:
        owner.release()
    gc.collect()  # and what this one left, now rather than in a later test
    assert [str(w.message) for w in recwarn] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_without_a_lifespan_services_that_cannot_start_answer_503(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / ".cleveragents").mkdir()
    (tmp_path / ".cleveragents" / "config.toml").write_text("defaults = [\n")
    app = users_app(A2A(agent=Agent(name="Echo", handler=handler)), workspace=tmp_path, memory=True)
    # httpx's ASGI transport sends no lifespan events: the first request starts the services.
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        answer = await client.post("/a2a", json=rpc("ListTasks"), headers=V1)
        assert answer.status_code == 503 and answer.json()["error"]["code"] == -32603
        assert "config.toml" not in answer.text
        assert (await client.get("/tasks")).status_code == 500
        assert (await client.get("/users/ada")).status_code == 200


async def test_the_routes_keep_the_apps_host_origin_and_content_type_checks(tmp_path):
    """FastAPI copies a router's routes one by one, without middleware: each of ours
    carries the checks itself."""
    a2a = A2A(agent=Agent(name="Echo", handler=handler), auth_token="sk-secret")
    app = users_app(a2a, workspace=tmp_path, memory=True, cors_origins=("https://app.example",))
    async with serving(app) as (server, client):
        auth = {**V1, "Authorization": "Bearer sk-secret"}
        rebound = await client.post("/a2a", json=rpc("ListTasks"), headers={**auth, "Host": "evil.example"})
        assert rebound.status_code == 421
        foreign = await client.post("/a2a", json=rpc("ListTasks"), headers={**auth, "Origin": "https://evil.example"})
        assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers
        plain = await client.post("/a2a", content=json.dumps(rpc("ListTasks")), headers=auth)
        assert plain.status_code == 415
        preflight = await client.options("/tasks", headers={"Origin": "https://app.example",
                                                            "Access-Control-Request-Method": "GET"})
        assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "https://app.example"
        allowed = await client.get("/tasks", headers={**auth, "Origin": "https://app.example"})
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://app.example"
        assert (await client.get("/users/ada", headers={"Host": "evil.example"})).status_code == 200  # the user's own


def test_get_router_without_fastapi_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "fastapi", None)  # what an environment without FastAPI sees
    with pytest.raises(ImportError, match="pip install fastapi"):
        A2A(agent=Agent(name="Echo", handler=handler)).get_router(memory=True)
