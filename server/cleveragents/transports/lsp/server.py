"""The A2A backend as a pygls server on stdio (the entry point is ``main.py``).

The services (pydantic models, the SQLite store) load in a worker thread after
``initialized``, or on the first request.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cleveragents._version import __version__
from cleveragents.a2a import dialects, envelope, methods
from cleveragents.a2a.errors import internal_error_payload
from cleveragents.config import Settings
from cleveragents.transports.lsp.calls import Connection, answer_call
from cleveragents.transports.lsp.framing import FrameError, Frames, read_frames
from cleveragents.transports.lsp.handshake import connection_extensions, requested_version, workspace_root
from cleveragents.transports.lsp.notifications import pump_events
from cleveragents.transports.lsp.pipe_writer import PipeWriter
from cleveragents.transports.lsp.protocol import (
    A2AProtocol,
    JsonRpcException,
    JsonRpcInternalError,
    WireResponse,
    error_for,
    prepared_converter,
)
from cleveragents.transports.runtime import ServiceRuntime, stopped_by_signal

logger = logging.getLogger("cleveragents.lsp")

EOF_GRACE_SECONDS = 5.0
PARENT_POLL_SECONDS = 2.0
_UNANSWERED = object()
_UNKNOWN = object()  # not yet worked out


class A2ALanguageServer(LanguageServer):
    protocol: A2AProtocol

    def __init__(self, settings: Settings, *, workspace_fixed: bool = False,
                 container_options: dict[str, Any] | None = None, agent_card: dict[str, Any] | None = None,
                 runtime: ServiceRuntime | None = None):
        super().__init__(
            "cleveragents", __version__, protocol_cls=A2AProtocol,
            converter_factory=prepared_converter,
        )
        self._workspace_fixed = workspace_fixed
        # The options are the Container's: a published agent's actor and card (``A2A(...)``).
        self.runtime = runtime or ServiceRuntime(settings=settings, container_options=container_options)
        self.agent_card = agent_card
        self.a2a_version: str | None = None
        self.a2a_extensions: tuple[str, ...] = ()  # activated for the connection, in initialize
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._stopping = False
        self._pumps: set[asyncio.Task[None]] = set()
        self._watchdog: asyncio.Future[None] | None = None
        self._handlers: dict[str, Any] = {}
        self._initialize_seen = False  # LSP: nothing but initialize (and exit) is served before it
        self._answered_early: Any = _UNANSWERED  # the id of an initialize main.py answered before pygls loaded
        self._editor: Any = _UNKNOWN  # the client's Editor (or None), once initialize has told us
        self._orphaned = asyncio.Event()
        self._client_stalled = False
        # workDoneToken -> the request it reports on, so the client can cancel it.
        self._progress_requests: dict[Any, asyncio.Task[Any]] = {}

    # -- configuration from the client ---------------------------------------------
    def configure_from_initialize(self, params: types.InitializeParams) -> None:
        options = params.initialization_options
        self.a2a_version = requested_version(options)
        self.a2a_extensions = connection_extensions(options)
        if params.process_id and self._watchdog is None:
            self._watchdog = asyncio.ensure_future(self._exit_with_parent(params.process_id))
        if self._workspace_fixed or self.runtime.started:
            return
        root = workspace_root(self.protocol.unstructure(params))
        if root is not None and self.runtime.settings is not None:
            self.runtime.settings = replace(self.runtime.settings, workspace=root)

    async def _exit_with_parent(self, pid: int) -> None:
        """LSP: the server exits when the process that started it is gone, so a crashed
        editor never leaves it behind."""
        while not self._stopping:
            await asyncio.sleep(PARENT_POLL_SECONDS)
            if not _process_alive(pid):
                logger.warning("the client process %s is gone; shutting down", pid)
                self.request_stop()
                self._orphaned.set()

    # -- the services --------------------------------------------------------------
    def warm_up(self) -> None:
        """Start loading the services now, so the first request doesn't wait."""
        if self._loop is not None:
            self.runtime.start()

    # -- requests ------------------------------------------------------------------
    def handler_for(self, method: str) -> Any:
        """The request handler for ``method`` (kept for names in the method table)."""
        if (handler := self._handlers.get(method)) is not None:
            return handler

        async def handle(params: Any) -> WireResponse:
            return await self._serve(method, params, self.protocol.msg_id)

        if method in methods.METHODS:
            self._handlers[method] = handle
        return handle

    async def _serve(self, method: str, params: Any, msg_id: Any) -> WireResponse:
        token = params.get("workDoneToken") if isinstance(params, dict) else None
        # A token of another type than LSP's (an integer or a string) is refused by the facade.
        tracked = asyncio.current_task() if type(token) in (str, int) else None
        if tracked is not None:
            self._progress_requests[token] = tracked
        try:
            return await answer_call(self.runtime, Connection(self.a2a_version, self.a2a_extensions), method,
                                     params, msg_id, notify=self.notify, attach=self._attach,
                                     editor=self._client_editor())
        finally:
            if tracked is not None and self._progress_requests.get(token) is tracked:
                del self._progress_requests[token]

    def _client_editor(self) -> Any:
        """An ``app.calls.Editor`` when the client applies workspace edits, else ``None``
        (the server then writes plan changes to disk itself). Capabilities are fixed at
        initialize, so it is worked out once, not on every request."""
        if self._editor is not _UNKNOWN:
            return self._editor
        from cleveragents.transports.lsp.edits import LspEditor, client_can_edit

        try:
            capabilities = self.client_capabilities
        except Exception:  # no initialize yet: ask again on the next request
            return None
        self._editor = LspEditor(self) if client_can_edit(capabilities) else None
        return self._editor

    def cancel_progress(self, token: Any) -> bool:
        """`window/workDoneProgress/cancel`: cancel the request reporting on ``token``."""
        request = self._progress_requests.get(token)
        if request is None:
            return False
        request.cancel()
        return True

    def _attach(self, msg_id: Any, subscription_id: str, events: Any) -> None:
        def start() -> None:
            task = asyncio.ensure_future(pump_events(subscription_id, events, self.notify))
            self._pumps.add(task)
            task.add_done_callback(self._pump_done)

        if msg_id is None:
            start()
        else:
            self.protocol.after_response(msg_id, start)

    def _pump_done(self, task: asyncio.Task[None]) -> None:
        self._pumps.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.error("event subscription failed", exc_info=exc)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification; safe from any thread."""
        if self._loop is None or threading.get_ident() == self._loop_thread:
            self.protocol.notify(method, params)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.protocol.notify, method, params)

    # -- frames --------------------------------------------------------------------
    def on_frame(self, body: bytes) -> None:
        incoming = envelope.read(body)
        if incoming.refusal is not None:
            self.protocol.send_message(incoming.refusal)
            return
        message, kind = incoming.message, incoming.kind
        if kind != "response" and not self._admit_in_lifecycle(kind, message):
            return
        if kind == "request" and self.protocol.shutting_down and message["method"] != "exit":
            self.protocol.send_error(message["id"], {
                "code": -32600, "message": "Invalid request: the server is shutting down",
                "data": {"method": message["method"]},
            })
            return
        if kind == "request" and _is_lsp_notification(message["method"]):
            # A request must be answered; pygls would treat it as the notification and stay silent.
            self.protocol.send_error(message["id"], {
                "code": -32600, "message": f"Invalid request: {message['method']} is a notification; "
                                           "send it without an id",
                "data": {"method": message["method"], "reason": "notification_with_id"},
            })
            return
        if kind == "request" and self.protocol.get_message_type(message["method"]) is None:
            # A2A methods keep their params as a plain dict, so the request skips pygls's
            # structuring and its per-message isinstance checks against typing Protocols
            # (tens of microseconds each), and its handler lookup.
            msg_id = message["id"]
            self.protocol.start_request(msg_id, self._serve(message["method"], message.get("params"), msg_id))
            return
        try:
            structured = self.protocol.structure_message(message)
        except JsonRpcException as exc:
            if exc.code == JsonRpcInternalError.CODE:  # not the params' shape: a bug, logged under an id
                payload = error_for(exc.__cause__ or exc, f"reading {message.get('method', 'a response')}")
            else:
                payload = {"code": exc.code, "message": exc.message, "data": {"method": message.get("method")}}
            if kind == "request":
                if message["method"] == "initialize":
                    self.initialize_refused(message["id"])
                self.protocol.send_error(message["id"], payload)
            return
        try:
            self.protocol.handle_message(structured)
        except Exception as exc:
            payload = internal_error_payload(exc, dialects.EXTENSION, message.get("method", "a response"))
            if kind == "request":
                self.protocol.send_error(message["id"], payload)

    def _admit_in_lifecycle(self, kind: str | None, message: dict[str, Any]) -> bool:
        """LSP's order: ``initialize`` once, first. Before it a request gets -32002 and a
        notification other than ``exit`` is dropped; a second one is refused."""
        method = message["method"]
        if method == "initialize" and kind == "request":
            if self._initialize_seen:
                self.protocol.send_error(message["id"], {
                    "code": -32600, "message": "Invalid request: initialize was sent already",
                    "data": {"method": method, "reason": "already_initialized"},
                })
                return False
            self._initialize_seen = True
            return True
        if self._initialize_seen or method == "exit":
            return True
        if kind == "request":
            self.protocol.send_error(message["id"], {
                "code": -32002, "message": f"Server not initialized: send initialize before {method}",
                "data": {"method": method, "reason": "not_initialized"},
            })
        else:
            logger.info("dropped %s: it came before initialize", method)
        return False

    def initialize_refused(self, msg_id: Any) -> None:
        """An ``initialize`` answered with an error did not initialize: the client may
        correct it and send it again. One answered early stands as answered."""
        if msg_id != self._answered_early:
            self._initialize_seen = False

    def report_server_error(self, error: BaseException, source: Any) -> None:
        """An error nobody waits for (a notification's handler, a failed write). pygls
        would show the user ``Error in server: <the exception>``, whose text may hold
        the server's paths: a bug is logged under an error id, and only that id is
        shown. A JSON-RPC error a handler raised on purpose is the client's mistake:
        one log line. Request errors are answered already (``error_for``)."""
        from pygls.exceptions import FeatureRequestError

        if source is FeatureRequestError:
            return
        where = source if isinstance(source, str) else getattr(source, "__name__", str(source))
        if isinstance(error, JsonRpcException) and error.code != JsonRpcInternalError.CODE:
            logger.warning("%s: %s", where, error.message)
            return
        payload = internal_error_payload(error, dialects.EXTENSION, where)
        if source is JsonRpcInternalError:  # a write to the client failed: telling it would fail too
            return
        self.protocol.notify(types.WINDOW_SHOW_MESSAGE, {
            "type": types.MessageType.Error.value,
            "message": f"{payload['message']} in the CleverAgents server (error id {payload['data']['error_id']}); "
                       "its log has the details",
        })

    def on_frame_error(self, error: FrameError) -> None:
        logger.warning("bad frame: %s", error.message)
        self.protocol.send_error(None, {"code": error.code, "message": error.message, "data": error.data})

    # -- lifecycle -----------------------------------------------------------------
    def request_stop(self) -> None:
        self._stopping = True

    def _give_up_on_client(self, reason: str) -> None:
        """The client stopped reading (see ``PipeWriter``): stop serving it and cancel
        its requests (and so their tasks) at once; nothing more can reach it."""
        self._client_stalled = True
        self.request_stop()
        self._orphaned.set()

    async def serve(self, frames: Frames, writer: PipeWriter, first: bytes | FrameError | None,
                    answered: Any = _UNANSWERED,
                    running: Mapping[Any, tuple[str, asyncio.Future[Any]]] | None = None) -> int:
        """Serve until ``exit`` or end of input. ``first`` is the frame the entry point
        already read; ``answered`` is its id when the entry point already answered it;
        ``running`` are the requests the entry point started and didn't finish."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.protocol.set_writer(writer)
        writer.on_overflow = self._give_up_on_client
        if writer.gave_up is not None:  # while the early requests were answered
            self._give_up_on_client(writer.gave_up)
        for msg_id, (method, task) in (running or {}).items():
            self.protocol.request_received(msg_id, method)
            self.protocol.adopt_request(msg_id, task)
        try:
            if first is not None:
                if answered is not _UNANSWERED:
                    self._answered_early = answered
                    self.protocol.suppress_response(answered)
                self.on_frame(first) if isinstance(first, bytes) else self.on_frame_error(first)
                reading = asyncio.ensure_future(read_frames(
                    frames, self.on_frame, self.on_frame_error, should_stop=lambda: self._stopping,
                ))
                orphaned = asyncio.ensure_future(self._orphaned.wait())
                await asyncio.wait({reading, orphaned}, return_when=asyncio.FIRST_COMPLETED)
                for task in (reading, orphaned):
                    task.cancel()
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            await self._close()
            await writer.drain()
            writer.close()
        code = self.protocol.exit_code
        if code is None:
            return 1 if self._client_stalled else 0
        return code

    async def _close(self) -> None:
        """Stop work cleanly: finish or cancel requests, end subscriptions, close the store."""
        # After `exit` nothing more may be sent; at end of input, in-flight requests
        # get a short grace period so a piped script still receives its answers. A
        # stop signal gives them none.
        finished = self.protocol.exit_code is not None or self._client_stalled or stopped_by_signal()
        self.runtime.stopping()
        await self.protocol.drain(0.0 if finished else EOF_GRACE_SECONDS)
        for task in list(self._pumps):
            task.cancel()
        if self._pumps:
            await asyncio.gather(*self._pumps, return_exceptions=True)
        await self.runtime.aclose()


def _is_lsp_notification(method: str) -> bool:
    """A method LSP defines as a notification (``exit`` is obeyed however it comes)."""
    entry = types.METHOD_TO_TYPES.get(method)
    return entry is not None and entry[1] is None and method != "exit"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, it just isn't ours
        return True
    return True
