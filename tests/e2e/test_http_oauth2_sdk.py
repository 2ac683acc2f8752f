"""The official a2a-sdk 1.x client calls an agent behind OAuth2 on real uvicorn: it
reads the card's ``oauth2`` scheme, and its ``AuthInterceptor`` sends the access token
(minted by the test, checked against a JWKS on loopback) as a bearer credential, over
JSON-RPC and HTTP+JSON, in 1.0 and through the SDK's 0.3 compat transports; a token
without the scope to send is refused with the scope named."""

from __future__ import annotations

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import ClientCallContext
from a2a.client.errors import A2AClientError
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidRequestError

from cleveragents import A2A, Agent, OAuth2
from tests.contract.runners import UvicornServer
from tests.oauth2_issuer import AUDIENCE, ISSUER, TOKEN_URL

SESSION = "session-1"


@pytest.fixture
async def server(issuer, tmp_path):
    oauth2 = OAuth2(issuer=ISSUER, audience=AUDIENCE, jwks_url=issuer.jwks_url, token_url=TOKEN_URL,
                    scopes={"agents:read": ["read"], "agents:send": ["read", "send"]})
    app = A2A(agent=Agent(name="Echo", handler=lambda text: f"echo: {text}"), oauth2=oauth2).asgi_app(
        workspace=tmp_path, memory=True)
    server = UvicornServer(app)
    await server.start()
    yield server
    await server.stop()


async def client_for(server, http: httpx.AsyncClient, binding: str, token: str, legacy: bool = False):
    path = "/.well-known/agent.json" if legacy else "/.well-known/agent-card.json"
    card = parse_agent_card((await http.get(server.url + path)).json())
    store = InMemoryContextCredentialStore()
    await store.set_credentials(SESSION, "oauth2", token)
    config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding], streaming=False)
    return ClientFactory(config).create(card, interceptors=[AuthInterceptor(store)]), card


def message(text: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(message_id=f"m-{text}", role=pb.Role.ROLE_USER,
                                                    parts=[pb.Part(text=text)]))


CONTEXT = ClientCallContext(state={"sessionId": SESSION})


@pytest.mark.parametrize("legacy", [False, True], ids=["1.0", "0.3"])
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize("kid", ["rsa-1", "ec-1"])
async def test_the_sdk_client_sends_the_access_token_the_card_asks_for(server, issuer, binding, legacy, kid):
    async with httpx.AsyncClient(timeout=20) as http:
        client, card = await client_for(server, http, binding, issuer.mint(kid, scope="agents:send"), legacy)
        scheme = card.security_schemes["oauth2"].oauth2_security_scheme
        assert scheme.flows.client_credentials.token_url == TOKEN_URL
        assert set(scheme.flows.client_credentials.scopes) == {"agents:read", "agents:send"}
        assert [list(r.schemes["oauth2"].list) for r in card.security_requirements] == [["agents:send"]]
        events = [event async for event in client.send_message(message("hello"), context=CONTEXT)]
        task = events[-1].task
        assert task.status.state == pb.TaskState.TASK_STATE_COMPLETED
        assert "".join(p.text for a in task.artifacts for p in a.parts) == "echo: hello"
        got = await client.get_task(pb.GetTaskRequest(id=task.id), context=CONTEXT)
        assert got.id == task.id
        # Without the context the interceptor has no token to send: the server refuses.
        with pytest.raises((A2AClientError, InvalidRequestError)) as caught:
            await client.get_task(pb.GetTaskRequest(id=task.id))
        assert "401" in str(caught.value) or str(caught.value) == "Authentication required"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_token_without_the_scope_to_send_is_refused_by_name(server, issuer, binding):
    async with httpx.AsyncClient(timeout=20) as http:
        reader, _ = await client_for(server, http, binding, issuer.mint(scope="agents:read"))
        # The SDK reports the status (the body, which names the scope, is tests/security's to read).
        with pytest.raises(A2AClientError, match="HTTP Error 403"):
            [event async for event in reader.send_message(message("hello"), context=CONTEXT)]
        listed = await reader.list_tasks(pb.ListTasksRequest(page_size=5), context=CONTEXT)
        assert list(listed.tasks) == []
