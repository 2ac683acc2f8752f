"""The LSP base protocol's lifecycle on the real stdio server, through raw frames:
what may come before ``initialize``, a second ``initialize``, and ``params: null``
(which clients in the wild send for methods that take no params: Emacs eglot's
``shutdown``)."""

from __future__ import annotations

import pytest

from tests.e2e.rawclient import RawServer

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def server(workspace):
    raw = await RawServer.start("--workspace", str(workspace), "--memory")
    yield raw
    await raw.kill()


async def test_a_request_before_initialize_gets_32002_and_initialize_still_works(server):
    early = await server.request(1, "session.list", {})
    assert early["error"]["code"] == -32002
    assert early["error"]["data"] == {"method": "session.list", "reason": "not_initialized"}
    lsp_early = await server.request(2, "shutdown")
    assert lsp_early["error"]["code"] == -32002
    # A notification before initialize is dropped: it gets no answer and changes nothing.
    server.send_message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///tmp/x.py", "languageId": "python", "version": 1, "text": "x"}}})
    reply = await server.initialize()
    assert "capabilities" in reply["result"]
    served = await server.request(3, "session.list", {})
    assert "result" in served, served
    assert [message for message in server.messages if message.get("id") is None and "error" in message] == []


async def test_a_second_initialize_is_refused_and_the_first_session_goes_on(server):
    await server.initialize()
    again = await server.request(5, "initialize", {"processId": None, "capabilities": {}})
    assert again["error"]["code"] == -32600
    assert again["error"]["data"] == {"method": "initialize", "reason": "already_initialized"}
    served = await server.request(6, "session.list", {})
    assert "result" in served, served


async def test_exit_before_initialize_ends_the_server(server):
    server.send_message({"jsonrpc": "2.0", "method": "exit", "params": None})
    code, _, _ = await server.wait()
    assert code == 1  # exit without shutdown: LSP's exit code 1


async def test_null_params_are_no_params(server):
    server.send_message({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"processId": None, "capabilities": {}}})
    assert "result" in await server.response(0)
    server.send_message({"jsonrpc": "2.0", "method": "initialized", "params": None})
    server.send_message({"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": None})
    assert (await server.response(1))["result"] is None
    server.send_message({"jsonrpc": "2.0", "method": "exit", "params": None})
    code, out, _ = await server.wait()
    assert code == 0 and out == b""


async def test_null_params_on_a_method_that_needs_params_name_what_is_missing(server):
    await server.initialize()
    server.send_message({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": None})
    answer = await server.response(7)
    assert answer["error"]["code"] == -32602, answer


async def test_params_that_are_a_string_are_still_refused(server):
    await server.initialize()
    server.send_message({"jsonrpc": "2.0", "id": 8, "method": "shutdown", "params": "x"})
    answer = await server.response(8)
    assert answer["error"]["code"] == -32600 and answer["error"]["data"]["field"] == "params"


async def test_a_refused_initialize_can_be_sent_again(server):
    refused = await server.request(1, "initialize", {
        "processId": None, "capabilities": {}, "initializationOptions": {"a2aVersion": "9.9"}})
    assert refused["error"]["code"] == -32009, refused
    not_yet = await server.request(2, "session.list", {})
    assert not_yet["error"]["data"]["reason"] == "not_initialized"
    reply = await server.initialize()
    assert "capabilities" in reply["result"], reply
    assert "result" in await server.request(3, "session.list", {})


async def test_an_initialize_of_the_wrong_shape_can_be_sent_again(server):
    refused = await server.request(1, "initialize", {"processId": "not a number", "capabilities": {}})
    assert refused["error"]["code"] == -32602, refused
    reply = await server.initialize()
    assert "capabilities" in reply["result"], reply
