"""A stock a2a-sdk 1.x agent served over gRPC, for our outbound client's tests: run as
``python -m tests.e2e.sdk_grpc_server TOKEN`` from the repository root.

The SDK's ``GrpcHandler`` serves its ``DefaultRequestHandler`` (the agent of
``tests/fakes/a2a_agent.py``: "wait" works until cancelled, anything else is echoed
as "remote: <text>"); every call needs ``authorization: Bearer TOKEN``. The card, over
HTTP, offers only the gRPC interface. Once both listen, one line goes to stderr:
``listening on http://127.0.0.1:PORT grpc 127.0.0.1:PORT``.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import grpc
import uvicorn
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from starlette.applications import Starlette

from tests.fakes.a2a_agent import Executor


class BearerOnly(grpc.aio.ServerInterceptor):
    def __init__(self, token: str):
        self.expected = f"Bearer {token}"

    async def intercept_service(self, continuation, details):
        if dict(details.invocation_metadata or ()).get("authorization") == self.expected:
            return await continuation(details)

        async def refuse(request, context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required")

        handler = await continuation(details)
        if handler is not None and handler.unary_stream is not None:
            async def refuse_stream(request, context):
                await refuse(request, context)
                yield  # an async generator, as the streaming handler is
            return grpc.unary_stream_rpc_method_handler(refuse_stream)
        return grpc.unary_unary_rpc_method_handler(refuse)


def card(target: str, extended: bool = False) -> pb.AgentCard:
    skills = [pb.AgentSkill(id="echo", name="Echo", description="Echoes its input", tags=["echo"])]
    if extended:
        skills.append(pb.AgentSkill(id="secret", name="Secret", description="For callers with a token", tags=["x"]))
    return pb.AgentCard(
        name="grpc-echo", description="An a2a-sdk agent over gRPC", version="1.0.0",
        supported_interfaces=[pb.AgentInterface(url=target, protocol_binding="GRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=True, extended_agent_card=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"], skills=skills,
        security_schemes={"bearer": pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
            scheme="Bearer"))})


async def main(token: str) -> None:
    server = grpc.aio.server(interceptors=[BearerOnly(token)])
    port = server.add_insecure_port("127.0.0.1:0")
    target = f"127.0.0.1:{port}"
    handler = DefaultRequestHandler(Executor(), InMemoryTaskStore(), card(target),
                                    push_config_store=InMemoryPushNotificationConfigStore(),
                                    extended_agent_card=card(target, extended=True))
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    await server.start()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(Starlette(routes=create_agent_card_routes(card(target))),
                                        log_level="warning", lifespan="off"))
    serving = asyncio.ensure_future(web.serve(sockets=[sock]))
    while not web.started:
        await asyncio.sleep(0.01)
    sys.stderr.write(f"listening on http://127.0.0.1:{sock.getsockname()[1]} grpc {target}\n")
    sys.stderr.flush()
    await serving
    await server.stop(1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
