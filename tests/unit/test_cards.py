"""Agent cards: the 1.0 and 0.3 shapes, the extended card, skills from functions, and
(when the a2a-sdk is installed) that both parse as the SDK's card types."""

from __future__ import annotations

import pytest

from cleveragents.a2a.cards import (
    AgentCardSpec,
    AgentProvider,
    ExtensionSpec,
    SkillSpec,
    card_both,
    card_v03,
    card_v1,
)

PLAN = SkillSpec("plan", "Plan", "Plans a change", ("code",), ("Rename foo to bar",))
ADMIN = SkillSpec("admin", "Admin", "Maintains the store", ("ops",))
SPEC = AgentCardSpec(
    name="CleverAgents", description="Autonomous software engineering agent", version="1.2.3",
    url="https://agent.example/a2a", provider=AgentProvider("CleverThis", "https://clever.example"),
    skills=(PLAN,), extended_skills=(ADMIN,), push_notifications=True, extended_card=True, bearer=True,
    api_key_header="X-API-Key",
    extensions=(ExtensionSpec("urn:cleveragents:extensions:v1", "Platform methods", params={"methods": ["a"]}),),
)
PLAIN = AgentCardSpec(name="A", description="B", version="0.1", url="http://127.0.0.1:8000/a2a")


def test_v1_card_shape():
    card = card_v1(SPEC)
    assert card["supportedInterfaces"] == [
        {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "https://agent.example", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "https://agent.example", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
    ]
    assert card["provider"] == {"organization": "CleverThis", "url": "https://clever.example"}
    assert card["capabilities"] == {
        "streaming": True, "pushNotifications": True, "extendedAgentCard": True,
        "extensions": [{"uri": "urn:cleveragents:extensions:v1", "required": False,
                        "description": "Platform methods", "params": {"methods": ["a"]}}],
    }
    assert card["securitySchemes"] == {
        "bearerAuth": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
    }
    assert card["securityRequirements"] == [{"schemes": {"bearerAuth": {"list": []}}},
                                            {"schemes": {"apiKey": {"list": []}}}]
    assert card["skills"] == [{"id": "plan", "name": "Plan", "description": "Plans a change", "tags": ["code"],
                               "examples": ["Rename foo to bar"]}]
    assert "url" not in card and "protocolVersion" not in card


def test_v03_card_shape():
    card = card_v03(SPEC)
    assert (card["protocolVersion"], card["url"], card["preferredTransport"]) == (
        "0.3.0", "https://agent.example/a2a", "JSONRPC")
    # The other interfaces only: clients add these to the main one.
    assert card["additionalInterfaces"] == [{"url": "https://agent.example", "transport": "HTTP+JSON"}]
    assert card["supportsAuthenticatedExtendedCard"] is True
    assert "extendedAgentCard" not in card["capabilities"]
    assert card["securitySchemes"] == {"bearerAuth": {"type": "http", "scheme": "Bearer"},
                                       "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
    assert card["security"] == [{"bearerAuth": []}, {"apiKey": []}]
    assert card["provider"] == {"organization": "CleverThis", "url": "https://clever.example"}


@pytest.mark.parametrize("render", [card_v1, card_v03])
def test_extended_skills_are_on_the_extended_card_only(render):
    assert [s["id"] for s in render(SPEC)["skills"]] == ["plan"]
    assert [s["id"] for s in render(SPEC, extended=True)["skills"]] == ["plan", "admin"]


@pytest.mark.parametrize("render", [card_v1, card_v03])
def test_a_card_without_auth_declares_no_schemes(render):
    card = render(PLAIN)
    assert not {"securitySchemes", "securityRequirements", "security", "provider"} & card.keys()
    assert card["defaultInputModes"] == ["text/plain", "application/json"]


def test_the_rest_url_may_be_given():
    card = card_v1(AgentCardSpec(name="A", description="B", version="1", url="https://a.example/rpc",
                                 rest_url="https://a.example/rest"))
    assert [i["url"] for i in card["supportedInterfaces"]] == [
        "https://a.example/rpc", "https://a.example/rest", "https://a.example/rpc", "https://a.example/rest"]


def test_v1_cards_parse_as_the_sdk_protobuf_type():
    pb2 = pytest.importorskip("a2a.types.a2a_pb2")
    json_format = pytest.importorskip("google.protobuf.json_format")
    for spec in (SPEC, PLAIN):
        for extended in (False, True):
            card = json_format.ParseDict(card_v1(spec, extended=extended), pb2.AgentCard())  # strict
            assert card.name == spec.name and len(card.supported_interfaces) == 4


def test_v03_cards_validate_as_the_sdk_model():
    v03 = pytest.importorskip("a2a.compat.v0_3.types")
    for spec in (SPEC, PLAIN):
        card = card_v03(spec, extended=True)
        model = v03.AgentCard.model_validate(card)
        assert model.model_dump(mode="json", by_alias=True, exclude_none=True) == card


@pytest.mark.parametrize("spec", [SPEC, PLAIN], ids=["auth", "plain"])
def test_the_card_both_read_is_the_1_0_card_plus_0_3_fields(spec):
    both = card_both(spec)
    v1, v03 = card_v1(spec), card_v03(spec)
    for key in ("supportedInterfaces", "capabilities", "securityRequirements", "skills", "name", "version"):
        assert both.get(key) == v1.get(key)
    for key in ("url", "protocolVersion", "preferredTransport", "additionalInterfaces",
                "supportsAuthenticatedExtendedCard", "security"):
        assert both.get(key) == v03.get(key)
    for name, scheme in (both.get("securitySchemes") or {}).items():
        assert scheme == {**v03["securitySchemes"][name], **v1["securitySchemes"][name]}


@pytest.mark.parametrize("spec", [SPEC, PLAIN], ids=["auth", "plain"])
def test_the_card_both_read_parses_as_each_sdk_card(spec):
    resolver = pytest.importorskip("a2a.client.card_resolver")
    v03 = pytest.importorskip("a2a.compat.v0_3.types")
    json_format = pytest.importorskip("google.protobuf.json_format")
    pb2 = pytest.importorskip("a2a.types.a2a_pb2")
    # A 1.0 client: the SDK's reader, and a plain ProtoJSON parser that skips unknown fields.
    for card in (resolver.parse_agent_card(card_both(spec)),
                 json_format.ParseDict(card_both(spec), pb2.AgentCard(), ignore_unknown_fields=True)):
        assert json_format.MessageToDict(card) == json_format.MessageToDict(
            json_format.ParseDict(card_v1(spec), pb2.AgentCard()))
    # A 0.3 client: the 0.3 model, which reads the same as the 0.3 card.
    model = v03.AgentCard.model_validate(card_both(spec))
    assert model == v03.AgentCard.model_validate(card_v03(spec))
