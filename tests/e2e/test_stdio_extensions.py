"""A2A extensions on stdio: a published agent that requires one, served by its own
script. A connection activates extensions in ``initialize``
(``initializationOptions.a2aExtensions``, echoed in the answer), a request in its
params (``"A2A-Extensions"``); a standard A2A request without the required one is
refused in both dialects, the agent's card lists them, and our own methods pass."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.agent_server import AGENTS, AgentServer

SCRIPT = AGENTS / "extension_agent.py"

OURS = "urn:cleveragents:extensions:v1"
SIGNED = "https://example.com/ext/signed/v1"
TRACE = "https://example.com/ext/trace/v1"
UNKNOWN = "https://example.com/ext/unknown/v1"


def v1_send(text: str, **transport: object) -> dict:
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}, **transport}


def v03_send(text: str, **transport: object) -> dict:
    return {"message": {"kind": "message", "role": "user", "messageId": f"m03-{text}",
                        "parts": [{"kind": "text", "text": text}]}, **transport}


def reply(task: dict) -> str:
    return "".join(part["text"] for artifact in task["artifacts"] for part in artifact["parts"])


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """A connection that activates nothing in initialize."""
    server = AgentServer.agent("extension_agent", "--memory", cwd=tmp_path_factory.mktemp("plain"))
    yield server
    assert server.close() == 0


def test_the_card_in_the_initialize_answer_lists_the_extensions(plain):
    card = plain.initialize_result()["capabilities"]["experimental"]["a2a"]["agentCard"]
    listed = card["capabilities"]["extensions"]
    assert [(e["uri"], e["required"]) for e in listed] == [(OURS, False), (TRACE, False), (SIGNED, True)]
    assert "activeExtensions" not in plain.initialize_result()["capabilities"]["experimental"]["a2a"]


def test_a_request_without_the_required_extension_is_refused_in_both_dialects(plain):
    error = plain.error("SendMessage", v1_send("no"))
    assert error["code"] == -32008 and SIGNED in error["message"]
    assert error["data"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
    error = plain.error("message/send", v03_send("no", **{"A2A-Extensions": TRACE}))
    assert error == {"code": -32008, "message": error["message"],
                     "data": {"method": "message/send", "missing": [SIGNED]}}
    # Tasks are gated as well as messages.
    assert plain.error("ListTasks", {})["code"] == -32008


def test_a_request_activates_the_extension_in_its_params(plain):
    sent = plain.result("SendMessage", v1_send("per-request", **{"A2A-Extensions": f"{SIGNED}, {UNKNOWN}"}))
    assert reply(sent["task"]) == "per-request"
    sent = plain.result("message/send", v03_send("as-a-list", **{"A2A-Extensions": [SIGNED]}))
    assert reply(sent) == "as-a-list"
    bad = plain.error("SendMessage", v1_send("bad", **{"A2A-Extensions": 7}))
    assert bad["code"] == -32602


def test_our_own_methods_are_not_gated(plain):
    assert "status" in plain.result("_cleveragents/health/check", {})


def test_initialize_activates_extensions_for_the_connection(tmp_path):
    server = AgentServer(SCRIPT, "--memory", cwd=tmp_path, handshake=False)
    try:
        server.handshake({"a2aExtensions": [SIGNED, UNKNOWN]})
        a2a = server.initialize_result()["capabilities"]["experimental"]["a2a"]
        assert a2a["activeExtensions"] == [SIGNED]  # the echo: what the agent supports
        assert reply(server.result("SendMessage", v1_send("connection"))["task"]) == "connection"
        assert reply(server.result("message/send", v03_send("connection-03"))) == "connection-03"
        # A request's own list replaces the connection's for that call.
        assert server.error("SendMessage", v1_send("override", **{"A2A-Extensions": TRACE}))["code"] == -32008
    finally:
        assert server.close() == 0


def test_initialize_refuses_a_malformed_activation(tmp_path):
    server = AgentServer(SCRIPT, "--memory", cwd=tmp_path, handshake=False)
    try:
        refused = server.call("initialize", {"processId": None, "capabilities": {},
                                             "initializationOptions": {"a2aExtensions": {"uri": SIGNED}}})
        assert refused["error"]["code"] == -32602
        assert "a2aExtensions" in refused["error"]["message"]
        server.handshake({"a2aExtensions": SIGNED})  # a refused initialize can be sent again
        assert server.initialize_result()["capabilities"]["experimental"]["a2a"]["activeExtensions"] == [SIGNED]
    finally:
        assert server.close() == 0
