"""What a publisher sets on the card through ``A2A(...)``, the bad values it refuses,
and the methods a card's capabilities turn off, through the in-process dispatcher."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest

from cleveragents import A2A, Agent, AgentExtension, AgentProvider
from cleveragents.a2a import methods
from cleveragents.a2a.capabilities import a2a_capabilities, backend_extension
from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container

AGENT = Agent(name="Echo", handler=lambda text: text)
PROVIDER = AgentProvider(organization="Example Org", url="https://example.org")


def test_the_card_says_what_the_publisher_set_in_both_versions():
    a2a = A2A(agent=AGENT, provider=PROVIDER, documentation_url="https://example.org/docs",
              default_input_modes=["text/plain", "image/png"], default_output_modes=["application/json"],
              streaming=False, push_notifications=False)
    for version in ("1.0", "0.3"):
        card = a2a.agent_card(version)
        assert card["provider"] == {"organization": "Example Org", "url": "https://example.org"}
        assert card["documentationUrl"] == "https://example.org/docs"
        assert card["defaultInputModes"] == ["text/plain", "image/png"]
        assert card["defaultOutputModes"] == ["application/json"]
        assert card["capabilities"]["streaming"] is False and card["capabilities"]["pushNotifications"] is False


def test_by_default_the_card_streams_pushes_and_names_no_provider():
    card = A2A(agent=AGENT).agent_card()
    assert card["capabilities"]["streaming"] and card["capabilities"]["pushNotifications"]
    assert "provider" not in card and "documentationUrl" not in card
    assert card["defaultInputModes"] == ["text/plain", "application/json"]


@pytest.mark.parametrize(("options", "message"), [
    ({"provider": {"organization": "X", "url": "https://x"}}, "AgentProvider"),
    ({"documentation_url": "ftp://example.org"}, "http(s) URL"),
    ({"default_input_modes": "text/plain"}, "not one string"),
    ({"default_output_modes": []}, "media types"),
    ({"default_output_modes": ["text"]}, "media types"),
    ({"default_input_modes": ["text/plain", 3]}, "media types"),
    ({"streaming": "no"}, "True or False"),
    ({"push_notifications": None}, "True or False"),
    ({"extended_agent_card_callback": "add"}, "callable"),
])
def test_bad_card_options_are_refused_with_a_clear_error(options, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        A2A(agent=AGENT, **options)


@pytest.mark.parametrize(("organization", "url"), [("", "https://x"), ("X", ""), (None, "https://x")])
def test_a_provider_needs_an_organization_and_a_url(organization, url):
    with pytest.raises(TypeError, match="AgentProvider needs"):
        AgentProvider(organization=organization, url=url)


def test_an_extensions_methods_go_in_its_params():
    extension = AgentExtension("urn:acme:reports:v1", methods=["_acme/report/*"], params={"format": "pdf"})
    (card_entry,) = [e for e in A2A(agent=AGENT, extensions=[extension]).agent_card()["capabilities"]["extensions"]
                     if e["uri"] == "urn:acme:reports:v1"]
    assert card_entry == {"uri": "urn:acme:reports:v1", "required": False,
                          "params": {"methods": ["_acme/report/*"], "format": "pdf"}}
    with pytest.raises(TypeError, match="methods"):
        AgentExtension("urn:acme:reports:v1", methods=[""])


def test_our_extensions_globs_cover_every_extension_method_and_nothing_else():
    globs = backend_extension().methods
    names = methods.extension_method_names()
    assert all(any(fnmatchcase(name, glob) for glob in globs) for name in names)
    assert all(any(fnmatchcase(name, glob) for name in names) for glob in globs)
    assert len(globs) < len(names) / 3


def test_stdio_lists_leave_out_what_the_card_turns_off():
    card = A2A(agent=AGENT, streaming=False).agent_card()
    listed = a2a_capabilities(card)["methods"]
    assert "SendStreamingMessage" not in listed["1.0"] and "message/stream" not in listed["0.3"]
    assert "CreateTaskPushNotificationConfig" in listed["1.0"] and "pushNotificationConfig/set" in listed["0.3"]
    assert "SendStreamingMessage" in a2a_capabilities()["methods"]["1.0"]


@pytest.fixture
def quiet(tmp_path):
    a2a = A2A(agent=AGENT, streaming=False, push_notifications=False)
    container = Container(Settings(workspace=tmp_path, memory=True), actor=AGENT, card=a2a)
    facade = A2ALocalFacade(container)
    yield facade
    facade.close()
    container.close()


def test_the_dispatcher_refuses_what_the_card_turns_off(quiet):
    message = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}}
    refused = quiet.dispatch_sync({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": message})
    assert refused.error.code == -32004 and refused.error.data[0]["metadata"] == {
        "method": "SendStreamingMessage", "capability": "streaming"}
    push = quiet.dispatch_sync({"jsonrpc": "2.0", "id": 2, "method": "pushNotificationConfig/list",
                                "params": {"id": "t"}})
    assert push.error.code == -32003 and push.error.data == {"method": "pushNotificationConfig/list",
                                                             "capability": "pushNotifications"}
    sent = quiet.dispatch_sync({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": message})
    assert sent.result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_an_async_callback_may_return_a_new_card_and_a_wrong_answer_is_ignored(tmp_path, caplog):
    async def replace_card(card: dict) -> dict:
        return {**card, "description": "for callers"}

    for callback, description in ((replace_card, "for callers"), (lambda card: "oops", "")):
        a2a = A2A(agent=AGENT, extended_agent_card_callback=callback)
        container = Container(Settings(workspace=tmp_path, memory=True), actor=AGENT, card=a2a)
        try:
            card = (await A2ALocalFacade(container).dispatch({"jsonrpc": "2.0", "id": 1,
                                                              "method": "GetExtendedAgentCard"})).result
        finally:
            container.close()
        assert card["description"] == description and card["name"] == "Echo"
    assert "returned a str" in caplog.text


def test_the_stdio_summary_card_lists_the_backends_skills():
    card = a2a_capabilities()["agentCard"]
    assert [s["id"] for s in card["skills"]] == ["plan-lifecycle", "registry-crud", "context-management"]
    (extension,) = card["capabilities"]["extensions"]
    assert extension["params"]["methods"] == list(backend_extension().methods)
