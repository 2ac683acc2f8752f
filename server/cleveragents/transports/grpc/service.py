"""``A2AService`` over gRPC, twice on one port: A2A 1.0's ``lf.a2a.v1.A2AService``,
where each RPC is the 1.0 JSON-RPC call of the same name, and A2A 0.3's
``a2a.v1.A2AService`` (``service_v03.py``), where each is a 0.3 JSON-RPC call. Both
are dispatched through the facade the HTTP app serves; a binding says how its
messages and errors convert.

A request message becomes the method's params (``a2a/grpc_wire.py``), and its answer
the response message; a streaming RPC sends each stream item as a ``StreamResponse``.
Callers pass the HTTP app's checks: the credentials in the call's metadata
(``authorization``, the API key header) go to the same ``HttpAuth``, whose refusal is
``UNAUTHENTICATED``, ``PERMISSION_DENIED`` or ``UNAVAILABLE``. Service parameters come
as metadata: ``a2a-version`` (absent: 1.0, the service's own version) and
``a2a-extensions``; the activated extensions go back as ``a2a-extensions`` initial
metadata (the 0.3 service is always 0.3). A dropped stream leaves its task running,
as over HTTP.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from cleveragents import tracing
from cleveragents.a2a import dialects, extensions, grpc_cost, grpc_wire
from cleveragents.a2a.errors import DomainError, ParseError, error_payload, internal_error_payload
from cleveragents.a2a.facade import CallContext
from cleveragents.transports.http.auth import Caller, Refusal

if TYPE_CHECKING:
    from cleveragents.a2a.streams import Call
    from cleveragents.transports.http.app import A2AHttpApp

logger = logging.getLogger("cleveragents.grpc")

CURRENT_VERSION = "1.0"
TRACE_KEYS = ("traceparent", "tracestate")
_REFUSAL_CODES = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 503: "UNAVAILABLE"}


class V1Binding:
    """The 1.0 service: each RPC is the 1.0 JSON-RPC method of its name, its messages
    the ProtoJSON the core serves, its errors 1.0 statuses with ``google.rpc`` details."""

    service = grpc_wire.SERVICE
    dialect = dialects.A2A_V1

    def rpcs(self) -> list[RpcShape]:
        return [RpcShape(rpc.name, grpc_wire.message_class(rpc.request), grpc_wire.message_class(rpc.response),
                         rpc.streaming, rpc) for rpc in grpc_wire.RPCS.values()]

    def method(self, rpc: RpcShape) -> str:
        return rpc.name

    def call(self, rpc: RpcShape, request: bytes, headers: dict[str, str]) -> tuple[str, dict[str, Any], str]:
        version = headers.get(grpc_wire.VERSION_KEY, "").strip() or CURRENT_VERSION
        return rpc.name, grpc_wire.read(rpc.request_class, request), version

    def answer(self, rpc: RpcShape, value: Any) -> Any:
        return grpc_wire.from_dict(value, rpc.wire.response)

    def status(self, error: dict[str, Any], code_name: str | None) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
        code_name = code_name or grpc_wire.status_code_name(error)
        details = grpc_wire.status_bytes(code_name, error)
        return code_name, str(error.get("message", "")), ((grpc_wire.STATUS_DETAILS_KEY, details),)


@dataclass(frozen=True, slots=True)
class RpcShape:
    """One RPC as the server registers it; ``wire`` is the binding's own description."""

    name: str
    request_class: Any
    response_class: Any
    streaming: bool
    wire: Any


class Binding(Protocol):
    service: str
    dialect: str

    def rpcs(self) -> list[RpcShape]: ...

    def method(self, rpc: RpcShape) -> str:
        """The JSON-RPC method the RPC is (what the caller must be allowed)."""

    def call(self, rpc: RpcShape, request: bytes, headers: dict[str, str]) -> tuple[str, dict[str, Any], str]:
        """(JSON-RPC method, params, A2A version) of a call, from the request's bytes
        (``grpc_wire.read``: its errors, or a DomainError when it can't be read as one)."""

    def answer(self, rpc: RpcShape, value: Any) -> Any:
        """A result (or a stream item) as the response message; ConversionError when it isn't one."""

    def status(self, error: dict[str, Any], code_name: str | None) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
        """(status code name, details, trailing metadata) of an error in the binding's dialect."""


class A2AGrpcService:
    """The RPCs of one ``A2AService`` (1.0's or 0.3's), answered by the HTTP app's
    services and auth."""

    def __init__(self, shared: A2AHttpApp, binding: Binding):
        self.shared = shared
        self.binding = binding
        self._ids = itertools.count(1)

    def handler(self) -> grpc.GenericRpcHandler:
        """The generic handler that serves every RPC of the binding."""
        handlers: dict[str, grpc.RpcMethodHandler] = {}
        for rpc in self.binding.rpcs():
            make = grpc.unary_stream_rpc_method_handler if rpc.streaming else grpc.unary_unary_rpc_method_handler
            behaviour = self._streaming(rpc) if rpc.streaming else self._unary(rpc)
            # No request deserializer: a request's bytes are read once its caller is known (``_open``).
            handlers[rpc.name] = make(behaviour, response_serializer=rpc.response_class.SerializeToString)
        return grpc.method_handlers_generic_handler(self.binding.service, handlers)

    # -- the two shapes of RPC ------------------------------------------------------
    def _unary(self, rpc: RpcShape) -> Callable[[Any, Any], Awaitable[Any]]:
        async def answer(request: Any, context: grpc.aio.ServicerContext) -> Any:
            call = await self._open(rpc, request, context)
            if call.follow is not None:  # no standard method has one; nothing here would read it
                call.follow.close()
            if call.response is None:  # a stream where one answer was due: its last item answers
                async for _ in call:
                    pass
            response = call.final_response()
            if response.error is not None:
                await self._abort(context, response.to_wire()["error"])
            return await self._converted(context, response.result, rpc)
        return answer

    def _streaming(self, rpc: RpcShape) -> Callable[[Any, Any], AsyncIterator[Any]]:
        async def items(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            call = await self._open(rpc, request, context)
            if call.response is not None:  # refused at once, or answered in one piece
                if call.response.error is not None:
                    await self._abort(context, call.response.to_wire()["error"])
                yield await self._converted(context, call.response.result, rpc)
                return
            try:
                async for item in call:
                    yield await self._converted(context, item.payload, rpc)
            finally:  # the client went away, or the stream ended: the task runs on
                await call.aclose()
            if call.error is not None:
                await self._abort(context, call.error)
        return items

    # -- one call ---------------------------------------------------------------------
    async def _open(self, rpc: RpcShape, request: Any, context: grpc.aio.ServicerContext) -> Call:
        """Check the caller, then run the call up to its answer (or its first item)."""
        metadata = [(key, value) for key, value in context.invocation_metadata() or () if isinstance(value, str)]
        headers = dict(metadata)
        dialect = self.binding.dialect
        caller = await self.shared.auth.authenticate(headers)
        refusal = caller if isinstance(caller, Refusal) else None
        if isinstance(caller, Caller):
            refusal = self.shared.auth.authorize(caller, self.binding.method(rpc))
        if refusal is not None:
            await self._refuse(context, refusal)
        try:
            method, params, version = await grpc_wire.read_aside(
                functools.partial(self.binding.call, rpc, request, headers), len(request))
        except DomainError as exc:  # a request the binding can't read (a bad resource name)
            await self._abort(context, error_payload(exc, dialect))
        except grpc_cost.TooManyValues as exc:
            await self._abort(context, error_payload(ParseError(
                f"Parse error: {exc}", {"reason": "too many values", "max_bytes": grpc_cost.MAX_PARSE_COST}), dialect))
        except grpc_cost.MalformedMessage as exc:
            await self._abort(context, error_payload(ParseError(f"Parse error: {exc}", {"reason": "malformed"}),
                                                     dialect))
        try:
            facade = await self.shared.runtime.facade()
        except Exception as exc:
            await self._abort(context, internal_error_payload(exc, dialect, "starting the services (grpc)"),
                              "UNAVAILABLE")
        msg_id = next(self._ids)
        call_context = CallContext(
            method=method, dialect="", request_id=msg_id, transport="grpc", a2a_version=version,
            extensions=extensions.requested([v for k, v in metadata if k == grpc_wire.EXTENSIONS_KEY]),
            caller=caller.identity if isinstance(caller, Caller) else None)
        if tracing.on():
            call_context.trace_headers = {k: v for k in TRACE_KEYS if (v := headers.get(k)) is not None}
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        try:
            call = await facade.open(message, call_context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: its traceback goes to the log, only its id to the caller
            await self._abort(context, internal_error_payload(exc, dialect, f"{rpc.name} (grpc transport)"))
        if call_context.activated_extensions:
            await context.send_initial_metadata(
                ((grpc_wire.EXTENSIONS_KEY, ", ".join(call_context.activated_extensions)),))
        return call

    async def _converted(self, context: grpc.aio.ServicerContext, value: Any, rpc: RpcShape) -> Any:
        """The answer as the response message; one that doesn't fit is our bug (INTERNAL)."""
        try:
            return self.binding.answer(rpc, value)
        except grpc_wire.ConversionError as exc:
            await self._abort(context, internal_error_payload(exc, self.binding.dialect,
                                                              f"answering {rpc.name} (grpc)"))

    async def _refuse(self, context: grpc.aio.ServicerContext, refusal: Refusal) -> None:
        context.set_trailing_metadata(tuple((k.lower(), v) for k, v in refusal.headers.items()))
        await self._abort(context, error_payload(refusal.error, self.binding.dialect),
                          _REFUSAL_CODES.get(refusal.status))

    async def _abort(self, context: grpc.aio.ServicerContext, error: dict[str, Any],
                     code_name: str | None = None) -> None:
        """End the call with the status of a JSON-RPC error of the binding's dialect (raises)."""
        code_name, details, extra = self.binding.status(error, code_name)
        trailing = (*(context.trailing_metadata() or ()), *extra)
        await context.abort(grpc.StatusCode[code_name], details, trailing_metadata=trailing)


async def start_server(shared: A2AHttpApp, host: str, port: int, *, max_message_size: int,
                       max_concurrent_rpcs: int | None = None) -> tuple[grpc.aio.Server, int]:
    """A started gRPC server on ``host:port`` (0: a free port), and the port bound.
    ``OSError`` when the address can't be bound."""
    server = grpc.aio.server(
        options=[("grpc.max_receive_message_length", max_message_size), ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=max_concurrent_rpcs)
    from cleveragents.transports.grpc.service_v03 import V03Binding

    server.add_generic_rpc_handlers(tuple(A2AGrpcService(shared, binding).handler()
                                          for binding in (V1Binding(), V03Binding())))
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
