"""A2ALocalFacade: the one dispatcher behind every transport.

It looks the method up in the method table, checks the requested A2A version,
validates the params, calls the service that serves the method and maps whatever goes
wrong to a JSON-RPC error in the method's dialect.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import weakref
from collections.abc import Generator, Mapping
from typing import Any

import pydantic

from cleveragents import tracing
from cleveragents.a2a import bulk_json, dialects, envelope, extensions, methods, proto_names
from cleveragents.a2a.errors import (
    A2ANotAvailableError,
    A2AOperationNotFoundError,
    InvalidRequestError,
    ValidationError,
    error_payload,
    internal_error_payload,
    is_known,
)
from cleveragents.a2a.models import A2AErrorDetail, A2ARequest, A2AResponse
from cleveragents.a2a.streams import Call, Followed, call_notification
from cleveragents.a2a.version import A2AVersionNegotiator
from cleveragents.app.calls import CallContext
from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.json_limits import JsonLimits

logger = logging.getLogger(__name__)

__all__ = ["A2ALocalFacade", "Call", "CallContext", "CallerIdentity", "PendingResponse"]

# Params keys that belong to the transport, not to the method.
VERSION_PARAM = "A2A-Version"
PROGRESS_PARAM = "workDoneToken"
EXTENSIONS_PARAM = extensions.PARAM  # "A2A-Extensions"
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1  # LSP's integer


def _service_map(source: Any) -> dict[str, Any]:
    if source is None:
        return {}
    if isinstance(source, Mapping):
        return {k: v for k, v in source.items() if v is not None}
    services = getattr(source, "services", None)
    if isinstance(services, Mapping):
        return {k: v for k, v in services.items() if v is not None}
    raise TypeError("A2ALocalFacade needs a services mapping or a container with .services")


_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})


def _plain_request(raw: Any) -> tuple[Any, str, dict[str, Any]] | None:
    """The id, method and params of a request dict that ``A2ARequest`` would accept
    as it is, without building the model (a few microseconds of every call). Anything
    else (legacy names, a missing id, odd types) is left to the model."""
    if type(raw) is not dict or raw.get("jsonrpc") != "2.0" or not raw.keys() <= _ENVELOPE_KEYS:
        return None
    msg_id, method, params = raw.get("id"), raw.get("method"), raw.get("params", {})
    if type(method) is not str or not method.strip() or type(params) is not dict:
        return None
    if type(msg_id) is not int and (type(msg_id) is not str or not msg_id):
        return None
    return msg_id, method, params


def _check_progress_token(method: str, token: Any) -> None:
    """LSP's ProgressToken is a string or an integer (LSP's, 32 bits); anything else is
    -32602 naming it."""
    if isinstance(token, str) or (type(token) is int and _INT32_MIN <= token <= _INT32_MAX):
        return
    raise ValidationError("Invalid params: workDoneToken must be a string or a 32-bit integer", {
        "method": method,
        "errors": [{"loc": [PROGRESS_PARAM], "msg": "must be a string or a 32-bit integer (an LSP ProgressToken)",
                    "type": "progress_token_type"}],
    })


def _field_errors(exc: pydantic.ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]


class PendingResponse:
    """What ``dispatch`` returns: await it for the A2AResponse. Outside a running
    event loop the request runs at once (a call whose answer is never read, such as a
    plan's execute, still happens), and the attributes (``result``, ``error``, ...) are
    the response's, so synchronous callers may use it as the response itself."""

    __slots__ = ("_facade", "_request", "_context", "_response")

    def __init__(self, facade: A2ALocalFacade, request: A2ARequest | Mapping[str, Any], context: CallContext | None):
        self._facade = facade
        self._request = request
        self._context = context
        self._response: A2AResponse | None = None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._response = facade.dispatch_sync(request)

    def __await__(self) -> Generator[Any, None, A2AResponse]:
        if self._response is None:
            self._response = yield from self._facade.respond(self._request, self._context).__await__()
        return self._response

    def resolve(self) -> A2AResponse:
        if self._response is None:
            self._response = self._facade.dispatch_sync(self._request)
        return self._response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)

    def __repr__(self) -> str:
        return f"<PendingResponse {self._response!r}>"


class A2ALocalFacade:
    """Routes A2A requests to in-process services.

    ``A2ALocalFacade(services={...})`` takes a service map (keys such as
    ``session_service``, ``plan_lifecycle_service``, ``tool_registry``, ``event_queue``);
    ``A2ALocalFacade(container)`` takes anything with a ``services`` mapping; the task
    service and the event queue are served through their protocol handlers
    (``a2a/endpoints.py``). A
    method whose service is missing answers with a clear error naming the service.
    Every request's params are held to ``limits`` (the container's ``json_limits``, else
    the defaults) before anything reads them.
    """

    def __init__(
        self, container: Any = None, *, services: Mapping[str, Any] | None = None,
        negotiator: A2AVersionNegotiator | None = None, limits: JsonLimits | None = None,
    ):
        # The services' modules and the params models: loaded with the services, not at startup.
        from cleveragents.a2a.bindings import BINDINGS
        from cleveragents.a2a.endpoints import bind_handlers

        self._bindings = BINDINGS
        self._services = bind_handlers({**_service_map(container), **_service_map(services)})
        self.negotiator = negotiator or A2AVersionNegotiator()
        self.limits = limits or getattr(container, "json_limits", None) or JsonLimits()
        # The agent's cards (an AgentCardService), for the routes that serve them; or None.
        self.cards: Any = self._services.get("agent_card_service")
        self.extensions = getattr(self.cards, "extensions", None) or extensions.ExtensionSet()
        self._warned: set[str] = set()
        self._sync_loop: asyncio.AbstractEventLoop | None = None
        self._sync_lock = threading.Lock()

    @property
    def services(self) -> dict[str, Any]:
        return dict(self._services)

    # -- entry points --------------------------------------------------------------
    def dispatch(self, request: A2ARequest | Mapping[str, Any], context: CallContext | None = None) -> PendingResponse:
        """Dispatch one request; ``await`` the result."""
        return PendingResponse(self, request, context)

    def dispatch_sync(self, request: A2ARequest | Mapping[str, Any]) -> A2AResponse:
        """Dispatch from synchronous code. Not from inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("dispatch_sync() was called inside a running event loop; use `await facade.dispatch(...)`")
        with self._sync_lock:
            if self._sync_loop is None or self._sync_loop.is_closed():
                self._sync_loop = asyncio.new_event_loop()
                weakref.finalize(self, self._sync_loop.close)
            return self._sync_loop.run_until_complete(self.respond(request, None))

    async def handle_raw(self, body: bytes | str, context: CallContext | None = None) -> dict[str, Any] | None:
        """One raw JSON-RPC message in, its wire response out (``None`` for a
        notification). Used by transports that don't parse messages themselves."""
        incoming = envelope.read(body)
        if incoming.refusal is not None:
            return incoming.refusal
        if incoming.kind == "response":
            return None
        response = await self.respond(incoming.message, context)
        return response.to_wire() if incoming.kind == "request" else None

    def close(self) -> None:
        if self._sync_loop is not None and not self._sync_loop.is_closed():
            self._sync_loop.close()

    # -- the dispatcher ------------------------------------------------------------
    async def respond(self, raw: A2ARequest | Mapping[str, Any], context: CallContext | None = None) -> A2AResponse:
        """``dispatch`` as a plain coroutine: the call's one response. A stream's items
        go to ``context.notify`` (as ``call_notification``s) and the last one answers;
        a live stream after the response goes to ``context.attach_stream``."""
        if context is not None and context.attach_stream is not None:
            context.push = True
        call = await self.open(raw, context)
        if call.response is not None:
            if call.follow is not None:
                if context is not None and context.attach_stream is not None:
                    context.attach_stream(call.follow_key or "", call.follow)
                else:
                    call.follow.close()
            return call.response
        notify = context.notify if context is not None else None
        request_id = context.request_id if context is not None else call.id
        async for item in call:
            if notify is not None:
                notify(*call_notification(item, request_id))
        return call.final_response()

    async def open(self, raw: A2ARequest | Mapping[str, Any], context: CallContext | None = None) -> Call:
        """Run one request up to its answer: a ``Call`` with its response, or its
        stream of items (read already up to the first, so that a stream refused at
        once answers with its error). What transports use."""
        if not tracing.on():
            return await self._open(raw, context)
        method = raw.get("method") if isinstance(raw, Mapping) else getattr(raw, "method", None)
        attributes = {tracing.RPC_SYSTEM: "jsonrpc", tracing.RPC_METHOD: method,
                      tracing.TRANSPORT: context.transport if context is not None else "in-process",
                      tracing.PROTOCOL_VERSION: context.a2a_version if context is not None else None}
        carrier = context.trace_headers if context is not None else None
        with tracing.span(str(method), "server", attributes, carrier) as span:
            call = await self._open(raw, context)
            span.set_attribute(tracing.RPC_REQUEST_ID, str(call.id))
            if call.response is not None and call.response.error is not None:
                tracing.failed(span, call.response.error.message, call.response.error.code)
            return call

    async def _open(self, raw: A2ARequest | Mapping[str, Any], context: CallContext | None) -> Call:
        if (plain := _plain_request(raw)) is not None:
            msg_id, method, params = plain
        else:
            request = raw if isinstance(raw, A2ARequest) else self._coerce(raw)
            if isinstance(request, A2AResponse):
                return Call(request.id, request)
            msg_id, method, params = request.id, request.method, request.params
        spec = methods.get(method)
        if spec is None:
            return Call(msg_id, self._error(msg_id, A2AOperationNotFoundError(method), dialects.EXTENSION))
        try:
            result = await self._call(spec, msg_id, params, context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return Call(msg_id, self._error(msg_id, exc, spec.dialect, method=spec.name))
        if spec.streaming:
            return await Call.streaming(msg_id, result, lambda exc: self._error_payload(exc, spec.dialect, spec.name))
        if isinstance(result, Followed):
            return Call(msg_id, A2AResponse.of_result(msg_id, result.result), follow=result.items,
                        follow_key=result.key)
        response = A2AResponse.of_result(msg_id, result)
        if spec.bulk and not bulk_json.small(result):  # megabytes: in a worker thread, a piece at a time
            response.keep_encoded(await asyncio.to_thread(response.json_bytes_in_pieces))
        return Call(msg_id, response)

    def _coerce(self, raw: Mapping[str, Any]) -> A2ARequest | A2AResponse:
        msg_id = envelope.echo_id(raw)
        if isinstance(raw, Mapping) and "params" in raw and envelope.means_no_params(raw["params"]):
            raw = {key: value for key, value in raw.items() if key != "params"}
        if isinstance(raw, Mapping) and isinstance(raw.get("params"), list):
            return self._error(msg_id, ValidationError(
                "Invalid params: params must be an object",
                {"errors": [{"loc": ["params"], "msg": "must be an object", "type": "dict_type"}]},
            ), dialects.EXTENSION)
        try:
            return A2ARequest.model_validate(dict(raw))
        except pydantic.ValidationError as exc:
            return self._error(msg_id, InvalidRequestError("Invalid request", {"errors": _field_errors(exc)}),
                               dialects.EXTENSION)

    async def _call(self, spec: methods.MethodSpec, msg_id: Any, params: dict[str, Any],
                    context: CallContext | None) -> Any:
        # Every value of the params, the transport's keys included, before anything reads one.
        self.limits.check_params(params, spec.name)
        raw, requested_version, progress_token, requested_extensions = params, None, None, None
        if VERSION_PARAM in params or PROGRESS_PARAM in params or EXTENSIONS_PARAM in params:
            raw = dict(params)  # the transport's keys, not the method's
            requested_version = raw.pop(VERSION_PARAM, None)
            progress_token = raw.pop(PROGRESS_PARAM, None)
            requested_extensions = raw.pop(EXTENSIONS_PARAM, None)
        version = self.negotiator.check_requested(requested_version)
        if version is None and context is not None and context.a2a_version:
            version = self.negotiator.negotiate(context.a2a_version)  # the transport's: a header, initialize
        # The param replaces, for one call, what the transport says (a header, initialize).
        uris = (extensions.requested(requested_extensions) if requested_extensions is not None
                else context.extensions if context is not None else ())
        activated = self.extensions.activate(spec.name, spec.dialect, uris)
        if context is not None:
            context.activated_extensions = activated
        if spec.capability is not None and (refusal := getattr(self.cards, "refusal", None)) is not None:
            if (refused := refusal(spec)) is not None:  # the card turns it off
                raise refused
        if progress_token is not None:
            _check_progress_token(spec.name, progress_token)
        if spec.deprecated and spec.name not in self._warned:
            self._warned.add(spec.name)
            logger.warning("method %s is deprecated; use %s", spec.name, spec.replaced_by)

        if spec.dialect == dialects.A2A_V1:  # ProtoJSON: a field's proto name is taken too
            raw = proto_names.to_json_names(spec.name, raw)
        binding = self._bindings[spec.service, spec.call]
        try:
            validated = binding.params.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise ValidationError("Invalid params", {"method": spec.name, "errors": _field_errors(exc)}) from None

        service = self._services.get(spec.service)
        if service is None or not hasattr(service, spec.call):  # a duck-typed service may lack it
            raise A2ANotAvailableError(
                f"{spec.name} is not available: no {spec.service} is configured",
                {"method": spec.name, "service": spec.service},
            )
        if spec.with_context:
            if context is None:
                context = CallContext(method=spec.name, dialect=spec.dialect, request_id=msg_id)
            context.method, context.dialect = spec.name, spec.dialect
            context.a2a_version = version or context.a2a_version
            context.progress_token = progress_token if progress_token is not None else context.progress_token
        result = binding.call(service, validated, context)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _error(self, msg_id: Any, exc: BaseException, dialect: str, method: str | None = None) -> A2AResponse:
        return A2AResponse(id=msg_id, error=A2AErrorDetail(**self._error_payload(exc, dialect, method)))

    @staticmethod
    def _error_payload(exc: BaseException, dialect: str, method: str | None = None) -> dict[str, Any]:
        return error_payload(exc, dialect) if is_known(exc) else internal_error_payload(exc, dialect, method)

# The earlier spelling of the prefix, kept so existing imports keep working.
A2aLocalFacade = A2ALocalFacade
