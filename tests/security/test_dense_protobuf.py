"""Protobuf dense with values, from a gRPC caller or from a remote agent's gRPC interface.

Two bytes of protobuf make an empty message: 12 MiB of a message's ``parts`` are six
million parts. Parsed, then converted to ProtoJSON, each takes about 160 bytes, so one
request under the server's 16 MiB limit would take about 1 GiB, and a remote agent's
answer under the client's 64 MiB limit several. A message whose values would take more
than ``MAX_PARSE_COST`` is refused unparsed, and a server reads a request's bytes only
once the caller is known.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("grpc")

import grpc  # noqa: E402

from cleveragents.a2a import grpc_wire  # noqa: E402
from tests.e2e.grpc_server import grpc_server  # noqa: E402
from tests.security.test_dense_json import peak_rss_mib  # noqa: E402

TOKEN = "dense-protobuf-token"
PARTS = 6 * 2**20  # empty parts: 12 MiB on the wire


def varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(message: str, name: str, body: bytes, classes: Any = grpc_wire.message_class) -> bytes:
    """``body`` as the length-delimited field ``name`` of ``message`` (of ``classes``: 1.0's)."""
    number = classes(message).DESCRIPTOR.fields_by_name[name].number
    return varint(number << 3 | 2) + varint(len(body)) + body


def dense_message(parts: int = PARTS) -> bytes:
    """A Message of ``parts`` empty parts, serialized."""
    head = grpc_wire.message_class("Message")(message_id="dense", role=1).SerializeToString()
    return head + field("Message", "parts", b"") * parts


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from what is resident


def own_peak() -> float:
    return peak_rss_mib(os.getpid())


def status_error(exc: grpc.aio.AioRpcError) -> dict[str, Any]:
    return grpc_wire.error_of_status(exc.code().name, exc.details() or "", exc.trailing_metadata() or ())


async def test_a_request_dense_with_values_is_refused_unparsed(tmp_path):
    request = field("SendMessageRequest", "message", dense_message())
    with grpc_server(tmp_path, "--auth-token", TOKEN) as served:
        async with grpc.aio.insecure_channel(served.target, options=[
                ("grpc.max_send_message_length", 64 * 2**20),
                ("grpc.max_receive_message_length", 64 * 2**20)]) as channel:
            send = channel.unary_unary(f"/{grpc_wire.SERVICE}/SendMessage")
            hello = grpc_wire.message_class("SendMessageRequest")()
            hello.message.message_id, hello.message.role = "warm", 1
            hello.message.parts.add().text = "hello"
            auth = (("authorization", f"Bearer {TOKEN}"),)
            await send(hello.SerializeToString(), metadata=auth, timeout=30)
            before = peak_rss_mib(served.pid)

            with pytest.raises(grpc.aio.AioRpcError) as stranger:
                await send(request, timeout=60)
            assert stranger.value.code() is grpc.StatusCode.UNAUTHENTICATED, stranger.value
            with pytest.raises(grpc.aio.AioRpcError) as caller:
                await send(request, metadata=auth, timeout=60)
            grown = peak_rss_mib(served.pid) - before
            error = status_error(caller.value)
            assert grown < 150, f"the server's peak memory grew by {grown:.0f} MiB"
            assert caller.value.code() is grpc.StatusCode.INVALID_ARGUMENT, caller.value
            assert error["code"] == -32700 and "too many values" in error["message"], error
            with pytest.raises(grpc.aio.AioRpcError) as malformed:
                await send(b"\x0a\x05abc", metadata=auth, timeout=30)  # a field that runs past the message
            assert malformed.value.code() is grpc.StatusCode.INVALID_ARGUMENT, malformed.value
            assert status_error(malformed.value)["code"] == -32700, status_error(malformed.value)

            # The 0.3 service reads its requests the same way, and answers as the 0.3 SDK does.
            from cleveragents.a2a import grpc_wire_v03

            parts = field("Message", "content", b"", grpc_wire_v03.message_class) * PARTS
            send_v03 = channel.unary_unary(f"/{grpc_wire_v03.SERVICE}/SendMessage")
            with pytest.raises(grpc.aio.AioRpcError) as caller_v03:
                await send_v03(field("SendMessageRequest", "request", parts, grpc_wire_v03.message_class),
                               metadata=auth, timeout=60)
            grown = peak_rss_mib(served.pid) - before
            assert grown < 150, f"the server's peak memory grew by {grown:.0f} MiB"
            assert (caller_v03.value.details() or "").startswith("JSONParseError: Parse error: the SendMessageRequest "
                                                                 "holds too many values"), caller_v03.value

            text = "int main(void) { return f(a, b[1]); }\n" * (12 * 2**20 // 38)
            long = grpc_wire.message_class("SendMessageRequest")()
            long.message.message_id, long.message.role = "long", 1
            long.message.parts.add().text = text
            answer = grpc_wire.message_class("SendMessageResponse").FromString(
                await send(long.SerializeToString(), metadata=auth, timeout=60))
            assert answer.task.history[0].parts[0].text == text


@pytest.mark.parametrize("where", ["answer", "stream"])
async def test_a_remote_agent_answering_dense_protobuf_is_refused_unparsed(where):
    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
    from cleveragents.a2a.errors import InvalidAgentResponseError

    message = dense_message(16 * 2**20)  # 32 MiB, under the client's 64 MiB
    answers = {"SendMessage": field("SendMessageResponse", "message", message),
               "SendStreamingMessage": field("StreamResponse", "message", message)}

    async def answer(request: bytes, context: Any) -> bytes:
        return answers["SendMessage"]

    async def stream(request: bytes, context: Any) -> Any:
        yield answers["SendStreamingMessage"]

    server = grpc.aio.server(options=[("grpc.max_send_message_length", 64 * 2**20)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(grpc_wire.SERVICE, {
        "SendMessage": grpc.unary_unary_rpc_method_handler(answer),
        "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(stream)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    card = {"name": "dense", "description": "answers densely", "version": "1",
            "supportedInterfaces": [{"url": f"127.0.0.1:{port}", "protocolBinding": "GRPC",
                                     "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}
    try:
        config = ServerConnectionConfig(url=f"http://127.0.0.1:{port}", timeout_seconds=60)
        async with A2AClient(config, card=json.loads(json.dumps(card))) as client:
            assert client.interface.binding == "GRPC"
            await asyncio.sleep(0)
            reset_peak()
            before = own_peak()
            with pytest.raises(InvalidAgentResponseError) as caught:
                if where == "stream":
                    async with client.stream("hi") as items:
                        [item async for item in items]
                else:
                    await client.send("hi")
            grown = own_peak() - before
    finally:
        await server.stop(None)
    assert grown < 150, f"the client's peak memory grew by {grown:.0f} MiB"
    assert "too many values" in str(caught.value) and caught.value.data["limit"] > 0, caught.value.data
