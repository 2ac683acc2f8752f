"""Two ways to reach the backend with the same cases: the in-process facade, and a
real `cleveragents-lsp` subprocess driven by pytest-lsp."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from tests.conftest import SERVER_COMMAND
from tests.e2e.rawclient import frame

EVENT = "_cleveragents/event"
STREAM_NOTIFICATIONS = ("task/statusUpdate", "task/artifactUpdate")
TIMEOUT = 10.0
HTTP_TOKEN = "contract-token-7f3a9c"


class EventStream:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        return await asyncio.wait_for(self.queue.get(), timeout)

    def pending(self) -> int:
        return self.queue.qsize()


class FacadeRunner:
    name = "facade"

    def __init__(self, workspace: Path):
        self.workspace = workspace
        self.ids = itertools.count(1)
        self.streams: dict[str, EventStream] = {}
        self._pumps: list[asyncio.Task[None]] = []
        self._open()

    def _open(self) -> None:
        from cleveragents.a2a.facade import A2ALocalFacade
        from cleveragents.config import Settings
        from cleveragents.container import Container

        self.container = Container(Settings(workspace=self.workspace))
        self.facade = A2ALocalFacade(self.container)

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        for task in self._pumps:
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        await self.container.aclose()
        self.facade.close()

    async def restart(self) -> None:
        await self.close()
        self._open()

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        return await self.call_with_context(method, params, None)

    async def call_with_context(self, method: str, params: Any, context: Any) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            request["params"] = params
        response = await self.facade.dispatch(request, context)
        return response.to_wire()

    async def raw(self, body: bytes) -> dict[str, Any] | None:
        return await self.facade.handle_raw(body)

    async def stream(self, method: str, params: Any) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        """A streaming call: its response, and the (method, params) notifications sent
        for it."""
        from cleveragents.app.calls import CallContext

        msg_id = next(self.ids)
        items: list[tuple[str, dict[str, Any]]] = []
        context = CallContext(method="", dialect="", request_id=msg_id,
                              notify=lambda m, p: items.append((m, p)) if m in STREAM_NOTIFICATIONS else None)
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        response = await self.facade.dispatch(request, context)
        return response.to_wire(), items

    async def subscribe(self, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], EventStream]:
        from cleveragents.app.calls import CallContext
        from cleveragents.transports.lsp.notifications import pump_events

        stream = EventStream()

        def attach(subscription_id: str, events: Any) -> None:
            notify = lambda method, p: stream.queue.put_nowait(p) if method == EVENT else None  # noqa: E731
            self._pumps.append(asyncio.ensure_future(pump_events(subscription_id, events, notify)))

        context = CallContext(method="", dialect="", attach_stream=attach)
        response = await self.call_with_context("_cleveragents/event/subscribe", params or {}, context)
        return response, stream


def _dict_converter():
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        names = tuple(f.name for f in attrs.fields(cls))
        converter.register_structure_hook(cls, lambda obj, c, names=names: c(**{n: obj.get(n) for n in names}))
    return converter


class StdioRunner:
    """A real server process. Raw bodies are written as frames; their responses are
    caught before pygls's client would discard them as unknown ids."""

    name = "stdio"

    def __init__(self, workspace: Path, extra_args: tuple[str, ...] = ()):
        self.workspace = workspace
        self.extra_args = extra_args
        self.client: LanguageClient | None = None
        self.streams: dict[str, EventStream] = {}
        self.raw_ids = itertools.count(10_000)
        self._waiters: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.orphans: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.initialize_result: types.InitializeResult | None = None
        self.stream_items: dict[Any, list[tuple[str, dict[str, Any]]]] = {}
        self.stream_ids = itertools.count(1)

    def _factory(self) -> LanguageClient:
        client = LanguageClient(converter_factory=_dict_converter)
        register_lsp_features(client)
        client.feature(EVENT)(lambda params: self._on_event(params))
        for name in STREAM_NOTIFICATIONS:
            client.feature(name)(lambda params, name=name: self._on_stream_item(name, params))
        original = client.protocol._handle_response

        def handle_response(msg_id: Any, result: Any = None, error: Any = None) -> None:
            wire = {"id": msg_id}
            if error is not None:
                wire["error"] = {"code": error.code, "message": error.message, "data": error.data}
                wire["error"] = {k: v for k, v in wire["error"].items() if v is not None}
            else:
                wire["result"] = result
            if msg_id in self._waiters:
                self._waiters.pop(msg_id).set_result(wire)
            elif msg_id is None:
                self.orphans.put_nowait(wire)
            else:
                original(msg_id, result, error)

        client.protocol._handle_response = handle_response  # type: ignore[method-assign]
        return client

    def _on_stream_item(self, method: str, params: dict[str, Any]) -> None:
        if "requestId" in params:
            self.stream_items.setdefault(params["requestId"], []).append((method, params))

    def _on_event(self, params: dict[str, Any]) -> None:
        sub_id = params.get("subscription_id")
        stream = self.streams.get(sub_id)
        if stream is None:  # arrived before the client code saw the subscribe result
            stream = self.streams[sub_id] = EventStream()
        stream.queue.put_nowait(params)

    async def start(self, initialization_options: Any = None) -> None:
        command = [*SERVER_COMMAND, "--workspace", str(self.workspace), *self.extra_args]
        config = ClientServerConfig(server_command=command, client_factory=self._factory)
        self.client = await config.start()
        self.initialize_result = await self.client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(), initialization_options=initialization_options
            )
        )

    async def close(self) -> None:
        if self.client is not None:
            await asyncio.wait_for(self.client.shutdown_session(), TIMEOUT)
            await self.client.stop()
            self.client = None

    async def restart(self) -> None:
        await self.close()
        await self.start()

    @property
    def returncode(self) -> int | None:
        return self.client._server.returncode if self.client and self.client._server else None

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        assert self.client is not None
        try:
            result = await asyncio.wait_for(
                self.client.protocol.send_request_async(method, {} if params is None else params), TIMEOUT
            )
        except JsonRpcException as exc:
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return {"error": error}
        return {"result": result}

    async def stream(self, method: str, params: Any) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        assert self.client is not None
        msg_id = f"stream-{next(self.stream_ids)}"
        try:
            result = await asyncio.wait_for(
                self.client.protocol.send_request_async(method, params, msg_id=msg_id), TIMEOUT)
            response: dict[str, Any] = {"result": result}
        except JsonRpcException as exc:
            response = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
        await asyncio.sleep(0)  # notifications sent before the response are handled by now
        return response, self.stream_items.pop(msg_id, [])

    async def raw(self, body: bytes) -> dict[str, Any] | None:
        """Send ``body`` as one frame; the response for its id (or the next id-less one)."""
        assert self.client is not None
        try:
            msg_id = json.loads(body).get("id")
        except Exception:
            msg_id = None
        if not isinstance(msg_id, (str, int)) or isinstance(msg_id, bool):
            msg_id = None
        waiter = None
        if msg_id is not None:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters[msg_id] = waiter
        self.client.protocol.writer.write(frame(body))
        if waiter is not None:
            return await asyncio.wait_for(waiter, TIMEOUT)
        return await asyncio.wait_for(self.orphans.get(), TIMEOUT)

    async def notify_raw(self, body: bytes) -> None:
        assert self.client is not None
        self.client.protocol.writer.write(frame(body))

    async def subscribe(self, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], EventStream]:
        response = await self.call("_cleveragents/event/subscribe", params or {})
        if "error" in response:
            return response, EventStream()
        sub_id = response["result"]["subscription_id"]
        return response, self.streams.setdefault(sub_id, EventStream())


class UvicornServer:
    """An ASGI app on real uvicorn, on ``host`` (127.0.0.1 by default; an IPv4 address)
    and a free port, in this event loop; ``async with UvicornServer(app) as url`` starts
    it and stops it. ``options`` go to uvicorn's config (``ssl_certfile``: https)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", **options: Any):
        self.app, self.host, self.options = app, host, options
        self.server: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        import uvicorn

        config = uvicorn.Config(self.app, host=self.host, port=0, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=2, **self.options)
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # older uvicorn
        self._task = asyncio.ensure_future(self.server.serve())
        while not self.server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("uvicorn did not start")
            await asyncio.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        scheme = "https" if self.options.get("ssl_certfile") else "http"
        self.url = f"{scheme}://{self.host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._task is not None:
            self.server.should_exit = True
            await asyncio.wait_for(self._task, TIMEOUT)
            self._task = None

    async def __aenter__(self) -> str:
        return await self.start()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop()


async def sse_messages(response: Any) -> Any:
    """(event, id, data) of each SSE event of an httpx streaming response."""
    event, event_id, data = None, None, []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event, event_id, "\n".join(data)
            event, event_id, data = None, None, []
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                event = value
            elif key == "id":
                event_id = value
            elif key == "data":
                data.append(value)


class HttpRunner:
    """Our HTTP app on real uvicorn, driven with httpx: JSON-RPC at POST /a2a, streams
    and event subscriptions as SSE."""

    name = "http"

    def __init__(self, workspace: Path):
        self.workspace = workspace
        self.ids = itertools.count(1)
        self.server: UvicornServer | None = None
        self.client: Any = None
        self._readers: list[asyncio.Task[None]] = []
        self._responses: list[Any] = []

    async def start(self) -> None:
        import httpx

        from cleveragents.config import Settings
        from cleveragents.transports.http.app import build_app

        # As `agents serve --http` serves by default: behind a token.
        self.server = UvicornServer(build_app(settings=Settings(workspace=self.workspace, auth_tokens=(HTTP_TOKEN,))))
        url = await self.server.start()
        self.client = httpx.AsyncClient(base_url=url, timeout=TIMEOUT, headers={"Authorization": f"Bearer {HTTP_TOKEN}"})

    async def close(self) -> None:
        for task in self._readers:
            task.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._readers.clear()
        for response in self._responses:
            await response.aclose()
        self._responses.clear()
        if self.client is not None:
            await self.client.aclose()
        if self.server is not None:
            await self.server.stop()

    async def restart(self) -> None:
        await self.close()
        await self.start()

    async def _post(self, body: bytes, headers: dict[str, str] | None = None) -> dict[str, Any] | None:
        response = await self.client.post("/a2a", content=body, headers={"Content-Type": "application/json",
                                                                        **(headers or {})})
        if response.status_code == 202:
            return None
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            # A streaming method always answers with a stream: here its last response.
            data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
            return json.loads(data[-1])
        return response.json()

    def _request(self, method: str, params: Any) -> dict[str, Any]:
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            request["params"] = params
        return request

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        response = await self._post(json.dumps(self._request(method, params)).encode())
        assert response is not None
        return response

    async def raw(self, body: bytes) -> dict[str, Any] | None:
        return await self._post(body)

    async def notify_raw(self, body: bytes) -> None:
        assert await self._post(body) is None

    async def stream(self, method: str, params: Any) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        request = self._request(method, params)
        items: list[tuple[str, dict[str, Any]]] = []
        last: dict[str, Any] | None = None
        async with self.client.stream("POST", "/a2a", json=request, headers={"Accept": "text/event-stream"}) as response:
            if "text/event-stream" not in response.headers.get("content-type", ""):
                return json.loads(await response.aread()), []
            async for _, event_id, data in sse_messages(response):
                last = json.loads(data)
                if "result" in last:
                    result = last["result"]
                    kind = "task/artifactUpdate" if ("artifactUpdate" in result or result.get("kind") == "artifact-update") \
                        else "task/statusUpdate"
                    items.append((kind, {"requestId": request["id"], "eventId": event_id, **result}))
        assert last is not None
        return last, items

    async def subscribe(self, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], EventStream]:
        request = self._request("_cleveragents/event/subscribe", params or {})
        stream = EventStream()
        response = await self.client.send(
            self.client.build_request("POST", "/a2a", json=request, headers={"Accept": "text/event-stream"}),
            stream=True)
        self._responses.append(response)
        if "text/event-stream" not in response.headers.get("content-type", ""):
            return json.loads(await response.aread()), stream
        messages = sse_messages(response)
        _, _, first = await asyncio.wait_for(messages.__anext__(), TIMEOUT)

        async def read() -> None:
            async for _, _, data in messages:
                stream.queue.put_nowait(json.loads(data)["params"])

        self._readers.append(asyncio.ensure_future(read()))
        return json.loads(first), stream
