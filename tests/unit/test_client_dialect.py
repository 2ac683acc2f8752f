"""How the outbound client reads cards, chooses a dialect and maps remote errors."""

import pytest

from cleveragents.a2a.client import A2AClientError, A2ARemoteError, select_interface
from cleveragents.a2a.client_dialect import DIALECTS, auth_headers, card_urls, offered_interfaces
from cleveragents.a2a.client_errors import http_error, remote_error
from cleveragents.a2a.errors import A2ANotAvailableError, A2AOperationNotFoundError, StorageFullError
from cleveragents.domain.errors import (
    AuthenticationError,
    BudgetExceededError,
    BusinessRuleViolation,
    PlanError,
    TaskNotFoundError,
)
from cleveragents.domain.task import Message, Part, PushConfig, Role

CARD_URL = "https://agent.example/.well-known/agent-card.json"
V1 = {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
V03 = {"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
REST = {"url": "https://agent.example", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}


def test_a_1_0_interface_is_preferred_wherever_it_is_listed():
    chosen = select_interface({"supportedInterfaces": [REST, V03, V1]}, CARD_URL)
    assert (chosen.version, chosen.url) == ("1.0", V1["url"])


def test_0_3_is_the_fallback_and_can_be_forced():
    assert select_interface({"supportedInterfaces": [V03, REST]}, CARD_URL).version == "0.3"
    assert select_interface({"supportedInterfaces": [V1, V03]}, CARD_URL, ["0.3"]).version == "0.3"


def test_a_0_3_card_uses_url_preferred_transport_and_additional_interfaces():
    card = {"protocolVersion": "0.3.0", "url": "https://agent.example/grpc", "preferredTransport": "GRPC",
            "additionalInterfaces": [{"url": "/rpc", "transport": "JSONRPC"}]}
    chosen = select_interface(card, "https://agent.example/.well-known/agent.json")
    assert (chosen.version, chosen.url) == ("0.3", "https://agent.example/rpc")  # relative: against the card


def test_tenant_and_patch_versions_are_honoured():
    offered = offered_interfaces({"supportedInterfaces": [{**V1, "protocolVersion": "1.0.1", "tenant": "t1"}]},
                                 CARD_URL)
    assert [(i.version, i.tenant) for i in offered] == [("1.0", "t1")]


def test_a_card_without_a_usable_interface_is_a_clear_error():
    with pytest.raises(A2AClientError) as caught:
        select_interface({"supportedInterfaces": [REST, {**V1, "protocolVersion": "2.0"}]}, CARD_URL)
    assert CARD_URL in str(caught.value) and "2.0 at" in str(caught.value)


def test_card_urls_try_the_well_known_paths_then_the_origin():
    assert card_urls("https://h.example") == ["https://h.example/.well-known/agent-card.json",
                                              "https://h.example/.well-known/agent.json"]
    assert card_urls("https://h.example/agents/x")[2:] == card_urls("https://h.example")
    assert card_urls("https://h.example/card.json") == ["https://h.example/card.json"]


def test_auth_headers_follow_the_cards_schemes():
    assert auth_headers({}, "t") == {"Authorization": "Bearer t"}
    api_key_v1 = {"securitySchemes": {"k": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}}}
    assert auth_headers(api_key_v1, "t") == {"X-Key": "t"}
    both_v03 = {"securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "X-Key"},
                                    "b": {"type": "http", "scheme": "bearer"}}}
    assert auth_headers(both_v03, "t") == {"Authorization": "Bearer t"}


def test_send_params_in_each_dialect():
    message = Message("m1", Role.USER, (Part.of_text("hi"),))
    hook = PushConfig(id="", task_id="", url="https://hook.example/h")
    v1 = DIALECTS["1.0"].send_params(message, blocking=False, history_length=2, accepted_output_modes=["text/plain"],
                                     push_config=hook, metadata={"k": 1})
    assert v1["message"]["role"] == "ROLE_USER"
    assert v1["configuration"] == {"returnImmediately": True, "historyLength": 2, "acceptedOutputModes": ["text/plain"],
                                   "taskPushNotificationConfig": {"url": "https://hook.example/h"}}
    assert v1["metadata"] == {"k": 1}
    v03 = DIALECTS["0.3"].send_params(message, blocking=True, history_length=None, accepted_output_modes=(),
                                      push_config=hook, metadata=None)
    assert v03["message"]["kind"] == "message"
    assert v03["configuration"] == {"blocking": True, "pushNotificationConfig": {"url": "https://hook.example/h"}}
    assert DIALECTS["0.3"].config_ref("t", "c") == {"id": "t", "pushNotificationConfigId": "c"}
    assert DIALECTS["1.0"].config_ref("t", "c") == {"taskId": "t", "id": "c"}


def test_remote_errors_are_the_projects_own_classes():
    info = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNAUTHENTICATED",
             "domain": "a2a-protocol.org", "metadata": {"scheme": "bearer"}}]
    exc = remote_error({"code": -32600, "message": "no", "data": info}, url="u", method="GetTask", standard=True)
    assert isinstance(exc, AuthenticationError) and isinstance(exc, A2ARemoteError)
    assert exc.data == {"scheme": "bearer", "reason": "UNAUTHENTICATED"} and exc.details == info
    standard = remote_error({"code": -32001, "message": "gone"}, url="u", method="tasks/get", standard=True)
    assert isinstance(standard, TaskNotFoundError) and standard.code == -32001
    ext = remote_error({"code": -32004, "message": "bad state", "data": {"plan_id": "p"}}, url="u",
                       method="_cleveragents/plan/apply", standard=False)
    assert isinstance(ext, BusinessRuleViolation) and not isinstance(ext, A2ANotAvailableError)
    assert ext.data == {"plan_id": "p"}
    assert isinstance(remote_error({"code": -32008, "message": "x"}, url="u", method="m", standard=False), PlanError)
    missing = remote_error({"code": -32601, "message": "no", "data": {"method": "m"}}, url="u", method="m",
                           standard=False)
    assert isinstance(missing, A2AOperationNotFoundError) and missing.operation == "m"
    odd = remote_error({"code": -1, "message": "?"}, url="u", method="m", standard=True)
    assert type(odd) is A2ARemoteError and "u" in str(odd) and "code -1" in str(odd)


@pytest.mark.parametrize("standard", [True, False])
def test_a_plain_internal_error_is_a_generic_remote_error_with_the_peers_message(standard):
    """A peer's catch-all -32603 says nothing of the cause: it is no storage-full error."""
    exc = remote_error({"code": -32603, "message": "Authenticated card not supported"}, url="u",
                       method="GetExtendedAgentCard", standard=standard)
    assert type(exc) is A2ARemoteError and not isinstance(exc, StorageFullError)
    assert "Authenticated card not supported" in str(exc) and exc.code == -32603


def test_error_info_picks_the_kind_by_reason_and_code():
    def info(reason: str) -> list[dict[str, str]]:
        return [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}]

    full = remote_error({"code": -32603, "message": "disk full", "data": info("RESOURCE_EXHAUSTED")}, url="u",
                        method="SendMessage", standard=True)
    budget = remote_error({"code": -32600, "message": "over budget", "data": info("RESOURCE_EXHAUSTED")}, url="u",
                          method="SendMessage", standard=True)
    assert isinstance(full, StorageFullError) and isinstance(budget, BudgetExceededError)
    assert not isinstance(full, BudgetExceededError) and not isinstance(budget, StorageFullError)


def test_http_errors_say_what_went_wrong():
    unauthorized = http_error(401, url="https://h/a2a", method="SendMessage", body="")
    assert isinstance(unauthorized, AuthenticationError) and unauthorized.status == 401
    assert "https://h/a2a" in str(unauthorized) and "token" in str(unauthorized)
    assert "the server failed" in str(http_error(502, url="u", method="m", body="<html>bad gateway</html>"))


def test_importing_the_client_does_not_import_httpx():
    import subprocess
    import sys

    code = "import sys, cleveragents.a2a.client as c; c.A2AClient; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


async def test_an_oversized_answer_is_refused():
    import httpx

    from cleveragents.a2a.client_wire import read_bounded
    from cleveragents.a2a.errors import InvalidAgentResponseError

    assert await read_bounded(httpx.Response(200, content=b'{"ok": 1}'), "m", "u") == '{"ok": 1}'
    with pytest.raises(InvalidAgentResponseError) as caught:
        await read_bounded(httpx.Response(200, content=b"x" * 100), "GetTask", "https://h/a2a", limit=10)
    assert "more than 10 bytes" in str(caught.value) and "https://h/a2a" in str(caught.value)
