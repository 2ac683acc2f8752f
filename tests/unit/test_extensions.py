"""``cleveragents.AgentExtension``: what it accepts, how ``Agent``, ``AgentTeam`` and
``A2A`` merge extensions into the card (each uri once), and the check that gates
requests."""

from __future__ import annotations

import pytest

from cleveragents import A2A, Agent, AgentExtension, AgentTeam
from cleveragents.a2a.errors import ExtensionSupportRequiredError
from cleveragents.a2a.extensions import ExtensionSet, requested
from cleveragents.domain.errors import ValidationError

OURS = "urn:cleveragents:extensions:v1"
SIGNED = AgentExtension("https://example.com/signed/v1", "Signed messages", required=True, params={"alg": "ed"})
TRACE = AgentExtension("https://example.com/trace/v1")


def echo(text: str) -> str:
    return text


@pytest.mark.parametrize("bad", [dict(uri=""), dict(uri="  "), dict(uri=None), dict(uri="a,b"),
                                 dict(uri="u", required="yes"), dict(uri="u", description=3),
                                 dict(uri="u", params=["a"]), dict(uri="u", params={"f": object()})])
def test_an_extension_refuses_what_a_card_could_not_say(bad):
    with pytest.raises(TypeError):
        AgentExtension(**bad)


def test_an_extension_is_frozen_and_keeps_a_copy_of_its_params():
    params = {"alg": "ed"}
    extension = AgentExtension("urn:x", params=params)
    params["alg"] = "rsa"
    assert extension.params == {"alg": "ed"}
    with pytest.raises(AttributeError):
        extension.required = True  # type: ignore[misc]


def test_the_card_lists_ours_then_the_agents_then_the_servers_each_once():
    a2a = A2A(agent=Agent("E", handler=echo, extensions=[TRACE, SIGNED]), extensions=[SIGNED])
    for version in ("1.0", "0.3"):
        listed = a2a.agent_card(version)["capabilities"]["extensions"]
        assert [e["uri"] for e in listed] == [OURS, TRACE.uri, SIGNED.uri]
        assert listed[2] == {"uri": SIGNED.uri, "description": "Signed messages", "required": True,
                             "params": {"alg": "ed"}}


def test_a_uri_declared_twice_differently_is_refused_at_construction():
    with pytest.raises(TypeError, match="declared twice"):
        Agent("E", handler=echo, extensions=[SIGNED, AgentExtension(SIGNED.uri)])
    with pytest.raises(TypeError, match="declared twice"):
        A2A(agent=Agent("E", handler=echo, extensions=[SIGNED]), extensions=[AgentExtension(SIGNED.uri)])
    with pytest.raises(TypeError, match="declared twice"):
        A2A(agent=Agent("E", handler=echo), extensions=[AgentExtension(OURS, required=True)])
    with pytest.raises(TypeError, match="AgentExtension"):
        A2A(agent=Agent("E", handler=echo), extensions=["urn:x"])


def test_a_team_carries_its_members_extensions():
    team = AgentTeam([Agent("A", handler=echo, extensions=[SIGNED]), Agent("B", handler=echo, extensions=[TRACE])])
    assert [e["uri"] for e in A2A(agents=team).agent_card()["capabilities"]["extensions"]] == [
        OURS, SIGNED.uri, TRACE.uri]


def test_requested_reads_header_text_and_lists():
    assert requested(" a, b,,a ") == ("a", "b")
    assert requested(["a, b", "c"]) == ("a", "b", "c")
    assert requested(None) == ()
    with pytest.raises(ValidationError):
        requested({"a": 1})


def test_the_check_gates_standard_methods_only():
    gate = ExtensionSet([SIGNED, TRACE])
    with pytest.raises(ExtensionSupportRequiredError) as refused:
        gate.activate("SendMessage", "a2a/1.0", (TRACE.uri,))
    assert refused.value.data == {"method": "SendMessage", "missing": [SIGNED.uri]}
    assert gate.activate("message/send", "a2a/0.3", ("other", SIGNED.uri)) == (SIGNED.uri,)
    assert gate.activate("GetExtendedAgentCard", "a2a/1.0", ()) == ()
    assert gate.activate("_cleveragents/health/check", "cleveragents", ()) == ()
