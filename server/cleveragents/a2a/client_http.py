"""``A2AClient``: calls a remote A2A agent over HTTP (JSON-RPC binding, SSE streams)
or gRPC.

It reads the agent card once, picks the interface and dialect (1.0 first, 0.3 as a
fallback; JSON-RPC before gRPC, which needs the ``grpc`` extra), and sends every call
there with the dialect's ``A2A-Version`` and the token. Over gRPC the same calls go
through ``client_grpc.GrpcWire``. Results come back as the project's own models,
decoded by the dialect's codec. httpx is imported when the first client is made, and
grpc when the first gRPC call is, never before.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cleveragents import tracing
from cleveragents.a2a.card_cache import fetch_card
from cleveragents.a2a.client_dialect import (
    DIALECTS,
    GRPC,
    STANDARD_METHODS,
    Dialect,
    Interface,
    auth_headers,
    select_interface,
)
from cleveragents.a2a.client_errors import A2AClientError
from cleveragents.a2a.client_wire import (
    SKIP,
    A2AStream,
    TransportErrors,
    answer,
    decode,
    last_of_stream,
    read_bounded,
    stream_item,
)
from cleveragents.a2a.errors import A2AError, InvalidAgentResponseError
from cleveragents.a2a.version import SUPPORTED_VERSIONS
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.event_stream import SseParser, SseTooLargeError, parse_sse
from cleveragents.domain.task import Message, Part, PushConfig, Role, StreamItem, Task, TaskState
from cleveragents.ids import new_id

if TYPE_CHECKING:
    import httpx

    from cleveragents.a2a.card_cache import CardCache
    from cleveragents.a2a.card_signing import CardVerifier
    from cleveragents.a2a.client import ServerConnectionConfig
    from cleveragents.a2a.client_grpc import GrpcWire
    from cleveragents.a2a.client_reach import Reach
    from cleveragents.app.tasks import TaskPage

VERSION_HEADER = "A2A-Version"
FINISH_SECONDS, FINISH_BYTES = 0.05, 64 * 1024  # of a stream its reader left
_UNSET: Any = object()


class A2AClient:
    """An A2A client for one remote agent. ``version`` forces a dialect ("1.0" or
    "0.3"); ``card`` skips reading the card (its URLs are then taken as absolute).
    ``card_verifier`` checks the signature of the card read (and of the extended card)
    under its policy: off, warn, or require (``CardSignatureError`` when none verifies).
    ``binding`` forces one ("JSONRPC" or "GRPC"); by default JSON-RPC is preferred.
    ``card_cache`` keeps the card read for as long as its ``Cache-Control`` allows, for
    the next client of the same URL; the client drops it when a call can't reach the agent."""

    def __init__(self, config: ServerConnectionConfig, *, version: str | None = None,
                 card: Mapping[str, Any] | None = None, http: httpx.AsyncClient | None = None,
                 card_verifier: CardVerifier | None = None, binding: str | None = None,
                 card_cache: CardCache | None = None):
        self.config = config
        self.card_verifier = card_verifier
        self._card_cache = card_cache
        self._preference: Sequence[str] = (version,) if version else SUPPORTED_VERSIONS
        self._card: dict[str, Any] | None = dict(card) if card is not None else None
        self._card_url = config.url
        self._interface: Interface | None = None
        self._http = http
        self._owns_http = http is None
        self._ids = itertools.count(1)
        self._connecting = asyncio.Lock()
        self._bindings: Sequence[str] | None = (binding,) if binding else None
        self._grpc: GrpcWire | None = None
        self._reach_rule: Reach | None = None

    def __repr__(self) -> str:
        where = (f"{self._interface.binding} {self._interface.version} at {self._interface.url}"
                 if self._interface else self.config.url)
        return f"A2AClient({where})"

    # -- lifecycle -----------------------------------------------------------------
    async def __aenter__(self) -> A2AClient:
        try:
            await self.connect()
        except BaseException:
            await self.aclose()  # `__aexit__` will not run
            raise
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, A2AClientError) and self._card_cache is not None:
            self._card_cache.drop(self.config.url)  # the agent may have moved: read its card again
        await self.aclose()

    async def aclose(self) -> None:
        if self._grpc is not None:
            grpc_wire, self._grpc = self._grpc, None
            await grpc_wire.aclose()
        if self._http is not None and self._owns_http:
            await self._http.aclose()
            self._http = None

    async def connect(self) -> Interface:
        """Read the card and choose the interface (once; later calls reuse it)."""
        async with self._connecting:
            if self._interface is None:
                if self._card is None:
                    self._card, self._card_url = await self._read_card()
                self._interface = select_interface(self._card, self._card_url, self._preference, self._bindings)
            return self._interface

    async def _read_card(self) -> tuple[dict[str, Any], str]:
        """(the card, its URL): from the cache, else fetched and checked (then kept)."""
        cached = self._card_cache.get(self.config.url) if self._card_cache is not None else None
        if cached is not None:
            return cached
        card, url, age = await fetch_card(self._client(), self.config.url, self.config.timeout_seconds)
        if self.card_verifier is not None:
            await self.card_verifier.check(card, url)
        if self._card_cache is not None:
            self._card_cache.put(self.config.url, card, url, age)
        return card, url

    @property
    def interface(self) -> Interface | None:
        return self._interface

    @property
    def dialect(self) -> Dialect:
        if self._interface is None:
            raise RuntimeError("A2AClient is not connected yet: use `async with` or `await connect()`")
        return DIALECTS[self._interface.version]

    async def card(self) -> dict[str, Any]:
        """The public agent card."""
        await self.connect()
        assert self._card is not None
        return self._card

    # -- typed operations ----------------------------------------------------------
    async def send(self, message: Message | str, *, blocking: bool = True, history_length: int | None = None,
                   accepted_output_modes: Sequence[str] = (), push_config: PushConfig | None = None,
                   metadata: Mapping[str, Any] | None = None) -> Task | Message:
        """SendMessage: the task (when ``blocking``, once it ends or needs input), or
        the agent's direct reply."""
        dialect = await self._dialect()
        params = dialect.send_params(_message(message), blocking=blocking, history_length=history_length,
                                     accepted_output_modes=accepted_output_modes, push_config=push_config,
                                     metadata=metadata)
        method = dialect.methods["send"]
        return decode(method, dialect.codec.decode_send_result, await self._rpc(method, params))

    def stream(self, message: Message | str, *, history_length: int | None = None,
               accepted_output_modes: Sequence[str] = (), push_config: PushConfig | None = None,
               metadata: Mapping[str, Any] | None = None, timeout: float | None = _UNSET) -> A2AStream[StreamItem]:
        """SendStreamingMessage: the task, then its status and artifact updates.
        ``timeout``: longest wait between two events (None: no limit)."""
        def params(dialect: Dialect) -> dict[str, Any]:
            return dialect.send_params(_message(message), blocking=True, history_length=history_length,
                                       accepted_output_modes=accepted_output_modes, push_config=push_config,
                                       metadata=metadata, streaming=True)
        return self._typed_stream("stream", params, timeout)

    def subscribe(self, task_id: str, *, last_event_id: str | None = None,
                  timeout: float | None = _UNSET) -> A2AStream[StreamItem]:
        """SubscribeToTask: a running task's current state, then its updates. With the
        ``last_event_id`` of an earlier stream (``A2AStream.last_event_id``), a server that
        numbers its events (ours does) sends only what came after it."""
        return self._typed_stream("subscribe", lambda _dialect: {"id": task_id}, timeout, last_event_id)

    async def get(self, task_id: str, *, history_length: int | None = None) -> Task:
        dialect = await self._dialect()
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        method = dialect.methods["get"]
        return decode(method, dialect.codec.decode_task, await self._rpc(method, params))

    async def list(self, *, context_id: str | None = None, state: TaskState | None = None,
                   page_size: int | None = None, page_token: str | None = None, history_length: int | None = None,
                   status_after: str | None = None, include_artifacts: bool | None = None) -> TaskPage:
        """One page of ListTasks; pass ``next_page_token`` back as ``page_token`` for
        the next (``iter_tasks`` does)."""
        from cleveragents.app.tasks import TaskPage

        dialect = await self._dialect()
        params = {key: value for key, value in (
            ("contextId", context_id), ("status", dialect.codec.state_to_wire(state) if state else None),
            ("pageSize", page_size), ("pageToken", page_token), ("historyLength", history_length),
            ("statusTimestampAfter", status_after), ("includeArtifacts", include_artifacts)) if value is not None}
        method = dialect.methods["list"]
        result = await self._rpc(method, params)

        def page(value: Any) -> TaskPage:
            if not isinstance(value, dict) or not isinstance(value.get("tasks", []), list):
                raise ValidationError.for_field(["tasks"], "Input should be a list", "list_type")
            tasks = [dialect.codec.decode_task(t, ("tasks", i)) for i, t in enumerate(value.get("tasks") or ())]
            return TaskPage(tasks=tasks, next_page_token=str(value.get("nextPageToken") or ""),
                            page_size=_count(value.get("pageSize"), len(tasks)),
                            total_size=_count(value.get("totalSize"), len(tasks)))
        return decode(method, page, result)

    async def iter_tasks(self, *, page_size: int | None = None, **filters: Any) -> AsyncIterator[Task]:
        """Every task that matches, page after page."""
        token: str | None = None
        while True:
            page = await self.list(page_size=page_size, page_token=token, **filters)
            for task in page.tasks:
                yield task
            if not page.next_page_token or page.next_page_token == token:
                return
            token = page.next_page_token

    async def cancel(self, task_id: str) -> Task:
        dialect = await self._dialect()
        method = dialect.methods["cancel"]
        return decode(method, dialect.codec.decode_task, await self._rpc(method, {"id": task_id}))

    async def create_push_config(self, config: PushConfig) -> PushConfig:
        """Register a webhook for ``config.task_id``; a blank ``config.id`` lets the
        server choose one."""
        dialect = await self._dialect()
        method = dialect.methods["push_create"]
        return decode(method, _push_decoder(dialect), await self._rpc(method, dialect.push_config_body(config)))

    async def get_push_config(self, task_id: str, config_id: str | None = None) -> PushConfig:
        dialect = await self._dialect()
        method = dialect.methods["push_get"]
        return decode(method, _push_decoder(dialect), await self._rpc(method, dialect.config_ref(task_id, config_id)))

    async def list_push_configs(self, task_id: str) -> builtins.list[PushConfig]:
        dialect = await self._dialect()
        method = dialect.methods["push_list"]
        result = await self._rpc(method, dialect.config_ref(task_id))

        def configs(value: Any) -> list[PushConfig]:
            items = value.get("configs") or [] if isinstance(value, dict) else value
            if not isinstance(items, list):
                raise ValidationError.for_field(["configs"], "Input should be a list", "list_type")
            return [_push_decoder(dialect)(item) for item in items]
        return decode(method, configs, result)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        dialect = await self._dialect()
        await self._rpc(dialect.methods["push_delete"], dialect.config_ref(task_id, config_id))

    async def extended_card(self) -> dict[str, Any]:
        """The extended agent card, which only an authenticated caller may read."""
        dialect = await self._dialect()
        method = dialect.methods["extended_card"]
        card: dict[str, Any] = decode(method, _object, await self._rpc(method, {}))
        if self.card_verifier is not None:
            assert self._interface is not None
            await self.card_verifier.check(card, self._interface.url)
        return card

    # -- any method ----------------------------------------------------------------
    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Call ``method`` (any name, ``_cleveragents/*`` included) and return its raw
        JSON ``result``."""
        await self.connect()
        return await self._rpc(method, dict(params or {}))

    def call_stream(self, method: str, params: Mapping[str, Any] | None = None, *,
                    last_event_id: str | None = None, timeout: float | None = _UNSET) -> A2AStream[Any]:
        """Call a streaming method and yield each SSE item raw: a response's ``result``,
        or a notification's ``params``. ``last_event_id`` resumes a stream."""
        async def items(parser: SseParser) -> AsyncIterator[Any]:
            await self.connect()
            async for item in self._sse(method, dict(params or {}), parser, last_event_id, timeout):
                yield item
        return A2AStream(items)

    # -- the wire ------------------------------------------------------------------
    async def _dialect(self) -> Dialect:
        await self.connect()
        return self.dialect

    def _typed_stream(self, operation: str, build: Callable[[Dialect], dict[str, Any]],
                      timeout: float | None, last_event_id: str | None = None) -> A2AStream[StreamItem]:
        async def items(parser: SseParser) -> AsyncIterator[StreamItem]:
            dialect = await self._dialect()
            method = dialect.methods[operation]
            async for result in self._sse(method, build(dialect), parser, last_event_id, timeout):
                yield decode(method, dialect.codec.decode_stream_item, result)
        return A2AStream(items)

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            from cleveragents.a2a.client_reach import guarded_client

            self._http = guarded_client(self._reach(), self.config.timeout_seconds)
        return self._http

    def _reach(self) -> Reach:
        if self._reach_rule is None:
            from cleveragents.a2a.client_reach import Reach

            self._reach_rule = Reach(self.config.url, self.config.timeout_seconds)
        return self._reach_rule

    def _headers(self, accept: str) -> dict[str, str]:
        assert self._interface is not None and self._card is not None
        token = self.config.token
        return {VERSION_HEADER: self._interface.version, "Accept": accept,
                **(auth_headers(self._card, token.get_secret_value()) if token is not None else {})}

    def _envelope(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": self._params(method, params)}

    def _params(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        tenant = self._interface.tenant if self._interface else None
        if tenant and method in STANDARD_METHODS and "tenant" not in params:
            params = {**params, "tenant": tenant}
        return params

    async def _grpc_wire(self) -> GrpcWire:
        """The channel to the chosen gRPC interface, opened on first use, to an address
        the reach rule checked."""
        if self._grpc is None:
            from cleveragents.a2a.client_grpc import GrpcWire, dial_target

            assert self._interface is not None and self._card is not None
            url = self._interface.url
            where = dial_target(url, self._card_url)
            addresses = await self._reach().addresses(where.host, url)
            token = self.config.token
            metadata = {VERSION_HEADER: self._interface.version,
                        **(auth_headers(self._card, token.get_secret_value()) if token is not None else {})}
            self._grpc = GrpcWire(url, where, metadata, self.config.timeout_seconds,
                                  address=addresses[0] if addresses else None)
        return self._grpc

    def _span(self, method: str, url: str, *, detached: bool = False) -> Any:
        """The span of one outbound call (a no-op while tracing is off); ``detached``
        for a stream, whose span must not be current while the caller reads it."""
        if not tracing.on():
            return tracing.NO_SPAN
        version = self._interface.version if self._interface is not None else None
        attributes = {tracing.RPC_SYSTEM: "jsonrpc", tracing.RPC_METHOD: method, tracing.URL: url,
                      tracing.PROTOCOL_VERSION: version}
        return (tracing.detached_span if detached else tracing.span)(method, "client", attributes)

    async def _rpc(self, method: str, params: dict[str, Any]) -> Any:
        assert self._interface is not None
        with self._span(method, self._interface.url) as span:
            try:
                return await self._rpc_untraced(method, params)
            except A2AError as exc:
                tracing.failed(span, exc.message, getattr(exc, "code", None))
                raise

    async def _rpc_untraced(self, method: str, params: dict[str, Any]) -> Any:
        assert self._interface is not None
        if self._interface.binding == GRPC:
            trace: dict[str, str] = {}
            tracing.inject(trace)
            return await (await self._grpc_wire()).call(method, self._params(method, params), trace)
        url = self._interface.url
        headers = self._headers("application/json, text/event-stream")
        tracing.inject(headers)
        request = self._client().build_request("POST", url, json=self._envelope(method, params), headers=headers)
        async with TransportErrors(method, url, self.config.timeout_seconds, deadline=True):
            response = await self._client().send(request, stream=True)
            try:
                body = await read_bounded(response, method, url)
            finally:
                await response.aclose()
        if response.headers.get("content-type", "").startswith("text/event-stream") and response.status_code < 400:
            return last_of_stream(method, url, body)
        return answer(method, url, response.status_code, body)

    async def _sse(self, method: str, params: dict[str, Any], parser: SseParser, last_event_id: str | None,
                   timeout: float | None) -> AsyncIterator[Any]:
        assert self._interface is not None
        if timeout is _UNSET:
            timeout = self.config.timeout_seconds
        if self._interface.binding == GRPC:  # no event ids: a subscription starts from the task's state
            with self._span(method, self._interface.url, detached=True) as span:
                trace: dict[str, str] = {}
                tracing.inject(trace, span)
                async for item in (await self._grpc_wire()).stream(method, self._params(method, params), timeout, trace):
                    yield item
            return
        url = self._interface.url
        headers = self._headers("text/event-stream")
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        request: dict[str, Any] = {"json": self._envelope(method, params), "headers": headers}
        if timeout != self.config.timeout_seconds:
            import httpx

            request["timeout"] = httpx.Timeout(self.config.timeout_seconds, read=timeout)
        guard = TransportErrors(method, url, timeout)
        with self._span(method, url, detached=True) as span:
            tracing.inject(headers, span)
            async with guard, self._client().stream("POST", url, **request) as response:
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    body = await read_bounded(response, method, url)
                    # A peer may answer a stream call with one JSON-RPC response (often an error).
                    yield answer(method, url, response.status_code, body)
                    return
                chunks = response.aiter_bytes()
                try:
                    async for event in parse_sse(chunks, parser):
                        item = stream_item(method, url, event.data)
                        if item is not SKIP:
                            yield item
                except SseTooLargeError as exc:
                    raise InvalidAgentResponseError(f"{method} at {url}: {exc}", {"url": url}) from None
                except GeneratorExit:  # the reader stopped (at the task's end, say)
                    await _finish(chunks)
                    raise


async def _finish(chunks: AsyncIterator[bytes]) -> None:
    """Read the rest of a stream that is ending anyway: a peer ends it right after the
    last event, and a response read to its end leaves its connection for the next call.
    At most ``FINISH_BYTES`` within ``FINISH_SECONDS``; past that it is closed unread."""
    left = FINISH_BYTES
    with contextlib.suppress(Exception):
        async with asyncio.timeout(FINISH_SECONDS):
            async for chunk in chunks:
                left -= len(chunk)
                if left < 0:
                    return


def _message(message: Message | str) -> Message:
    if isinstance(message, Message):
        return message
    return Message(message_id=new_id(), role=Role.USER, parts=(Part.of_text(message),))


def _push_decoder(dialect: Dialect) -> Callable[[Any], PushConfig]:
    return lambda value: dialect.codec.decode_push_config(value, task_id_required=False)


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError.for_field([], "Input should be an object", "dict_type")
    return value


def _count(value: Any, default: int) -> int:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else default
