"""``A2AService`` over gRPC: each RPC is the 1.0 JSON-RPC call of the same name,
dispatched through the facade the HTTP app serves.

A request message becomes the method's params (``a2a/grpc_wire.py``), and its answer
the response message; a streaming RPC sends each stream item as a ``StreamResponse``.
Callers pass the HTTP app's checks: the credentials in the call's metadata
(``authorization``, the API key header) go to the same ``HttpAuth``, whose refusal is
``UNAUTHENTICATED``, ``PERMISSION_DENIED`` or ``UNAVAILABLE``. Service parameters come
as metadata: ``a2a-version`` (absent: 1.0, the service's own version) and
``a2a-extensions``; the activated extensions go back as ``a2a-extensions`` initial
metadata. A dropped stream leaves its task running, as over HTTP.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc

from cleveragents import tracing
from cleveragents.a2a import dialects, extensions, grpc_wire
from cleveragents.a2a.errors import error_payload, internal_error_payload
from cleveragents.a2a.facade import CallContext
from cleveragents.transports.http.auth import Caller, Refusal

if TYPE_CHECKING:
    from cleveragents.a2a.streams import Call
    from cleveragents.transports.http.app import A2AHttpApp

logger = logging.getLogger("cleveragents.grpc")

CURRENT_VERSION = "1.0"
TRACE_KEYS = ("traceparent", "tracestate")
_REFUSAL_CODES = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 503: "UNAVAILABLE"}


class A2AGrpcService:
    """The RPCs of ``A2AService``, answered by the HTTP app's services and auth."""

    def __init__(self, shared: A2AHttpApp):
        self.shared = shared
        self._ids = itertools.count(1)

    def handler(self) -> grpc.GenericRpcHandler:
        """The generic handler that serves every RPC of ``grpc_wire.RPCS``."""
        handlers: dict[str, grpc.RpcMethodHandler] = {}
        for rpc in grpc_wire.RPCS.values():
            request_class = grpc_wire.message_class(rpc.request)
            response_class = grpc_wire.message_class(rpc.response)
            make = grpc.unary_stream_rpc_method_handler if rpc.streaming else grpc.unary_unary_rpc_method_handler
            behaviour = self._streaming(rpc) if rpc.streaming else self._unary(rpc)
            handlers[rpc.name] = make(behaviour, request_deserializer=request_class.FromString,
                                      response_serializer=response_class.SerializeToString)
        return grpc.method_handlers_generic_handler(grpc_wire.SERVICE, handlers)

    # -- the two shapes of RPC ------------------------------------------------------
    def _unary(self, rpc: grpc_wire.Rpc) -> Callable[[Any, Any], Awaitable[Any]]:
        async def answer(request: Any, context: grpc.aio.ServicerContext) -> Any:
            call = await self._open(rpc, request, context)
            if call.follow is not None:  # no standard method has one; nothing here would read it
                call.follow.close()
            if call.response is None:  # a stream where one answer was due: its last item answers
                async for _ in call:
                    pass
            response = call.final_response()
            if response.error is not None:
                await _abort(context, response.to_wire()["error"])
            return await _converted(context, response.result, rpc.response)
        return answer

    def _streaming(self, rpc: grpc_wire.Rpc) -> Callable[[Any, Any], AsyncIterator[Any]]:
        async def items(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            call = await self._open(rpc, request, context)
            if call.response is not None:  # refused at once, or answered in one piece
                if call.response.error is not None:
                    await _abort(context, call.response.to_wire()["error"])
                yield await _converted(context, call.response.result, rpc.response)
                return
            try:
                async for item in call:
                    yield await _converted(context, item.payload, rpc.response)
            finally:  # the client went away, or the stream ended: the task runs on
                await call.aclose()
            if call.error is not None:
                await _abort(context, call.error)
        return items

    # -- one call ---------------------------------------------------------------------
    async def _open(self, rpc: grpc_wire.Rpc, request: Any, context: grpc.aio.ServicerContext) -> Call:
        """Check the caller, then run the call up to its answer (or its first item)."""
        metadata = [(key, value) for key, value in context.invocation_metadata() or () if isinstance(value, str)]
        headers = dict(metadata)
        caller = await self.shared.auth.authenticate(headers)
        refusal = caller if isinstance(caller, Refusal) else None
        if isinstance(caller, Caller):
            refusal = self.shared.auth.authorize(caller, rpc.name)
        if refusal is not None:
            await _refuse(context, refusal)
        try:
            facade = await self.shared.runtime.facade()
        except Exception as exc:
            await _abort(context, internal_error_payload(exc, dialects.A2A_V1, "starting the services (grpc)"),
                         "UNAVAILABLE")
        msg_id = next(self._ids)
        call_context = CallContext(
            method=rpc.name, dialect="", request_id=msg_id, transport="grpc",
            a2a_version=headers.get(grpc_wire.VERSION_KEY, "").strip() or CURRENT_VERSION,
            extensions=extensions.requested([v for k, v in metadata if k == grpc_wire.EXTENSIONS_KEY]),
            caller=caller.identity if isinstance(caller, Caller) else None)
        if tracing.on():
            call_context.trace_headers = {k: v for k in TRACE_KEYS if (v := headers.get(k)) is not None}
        message = {"jsonrpc": "2.0", "id": msg_id, "method": rpc.name, "params": grpc_wire.to_dict(request)}
        try:
            call = await facade.open(message, call_context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: its traceback goes to the log, only its id to the caller
            await _abort(context, internal_error_payload(exc, dialects.A2A_V1, f"{rpc.name} (grpc transport)"))
        if call_context.activated_extensions:
            await context.send_initial_metadata(
                ((grpc_wire.EXTENSIONS_KEY, ", ".join(call_context.activated_extensions)),))
        return call


async def _converted(context: grpc.aio.ServicerContext, value: Any, name: str) -> Any:
    """The answer as the response message; one that doesn't fit is our bug (INTERNAL)."""
    try:
        return grpc_wire.from_dict(value, name)
    except grpc_wire.ConversionError as exc:
        await _abort(context, internal_error_payload(exc, dialects.A2A_V1, f"answering as {name} (grpc)"))


async def _refuse(context: grpc.aio.ServicerContext, refusal: Refusal) -> None:
    context.set_trailing_metadata(tuple((k.lower(), v) for k, v in refusal.headers.items()))
    await _abort(context, error_payload(refusal.error, dialects.A2A_V1), _REFUSAL_CODES.get(refusal.status))


async def _abort(context: grpc.aio.ServicerContext, error: dict[str, Any], code_name: str | None = None) -> None:
    """End the call with the status of a 1.0 JSON-RPC error (raises)."""
    code_name = code_name or grpc_wire.status_code_name(error)
    details = grpc_wire.status_bytes(code_name, error)
    trailing = (*(context.trailing_metadata() or ()), (grpc_wire.STATUS_DETAILS_KEY, details))
    await context.abort(grpc.StatusCode[code_name], str(error.get("message", "")), trailing_metadata=trailing)


async def start_server(shared: A2AHttpApp, host: str, port: int, *, max_message_size: int,
                       max_concurrent_rpcs: int | None = None) -> tuple[grpc.aio.Server, int]:
    """A started gRPC server on ``host:port`` (0: a free port), and the port bound.
    ``OSError`` when the address can't be bound."""
    server = grpc.aio.server(
        options=[("grpc.max_receive_message_length", max_message_size), ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=max_concurrent_rpcs)
    server.add_generic_rpc_handlers((A2AGrpcService(shared).handler(),))
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    try:
        bound = server.add_insecure_port(f"{shown}:{port}")
    except RuntimeError as exc:  # grpc's way of saying the port is taken
        raise OSError(f"cannot listen for gRPC on {shown}:{port}: {exc}") from None
    if bound == 0:
        raise OSError(f"cannot listen for gRPC on {shown}:{port}")
    await server.start()
    return server, bound


async def stop_server(server: grpc.aio.Server, grace: float = 5.0) -> None:
    """Stop taking calls; the running ones get ``grace`` seconds to finish."""
    try:
        await server.stop(grace)
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("stopping the gRPC server")
