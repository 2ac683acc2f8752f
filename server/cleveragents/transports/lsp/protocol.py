"""The stdio protocol: A2A capabilities in ``initialize``, responses written straight
from the facade's wire dicts, graceful ``exit``. It builds on ``pygls_hooks``, the one
module that touches pygls's internals."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import lsp_method

from cleveragents.a2a import dialects, envelope
from cleveragents.a2a.errors import error_payload, internal_error_payload, is_known
from cleveragents.transports.lsp.calls import WireResponse, cancel_and_wait
from cleveragents.transports.lsp.framing import frame_body
from cleveragents.transports.lsp.handshake import initialize_response
from cleveragents.transports.lsp.pygls_hooks import PyglsProtocol, prepared_converter

if TYPE_CHECKING:
    from cattrs import Converter

    from cleveragents.transports.lsp.pygls_hooks import RequestFuture
    from cleveragents.transports.lsp.server import A2ALanguageServer

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0


def error_for(exc: BaseException, where: str) -> dict[str, Any]:
    """The JSON-RPC error for an exception out of a handler pygls runs. pygls's own
    answer to an unexpected one (``JsonRpcInternalError.of``) carries the traceback,
    with the server's paths, in ``data``: here a bug is -32603 with an error id, and
    the traceback goes to stderr under that id. A JSON-RPC error the handler raised on
    purpose (bad params, an unknown command) is the client's mistake: one log line."""
    if isinstance(exc, JsonRpcException) and exc.code != JsonRpcInternalError.CODE:
        logger.warning("%s: %s", where, exc.message)
        payload: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            payload["data"] = exc.data
        return payload
    if is_known(exc):
        return error_payload(exc, dialects.EXTENSION)
    return internal_error_payload(exc, dialects.EXTENSION, where)


class A2AProtocol(PyglsProtocol):
    if TYPE_CHECKING:
        @property
        def server(self) -> A2ALanguageServer: ...

    def __init__(self, server: A2ALanguageServer, converter: Converter):
        self._draining = False  # before super(): it reads our attributes (see pygls_hooks)
        self._suppressed: set[Any] = set()
        super().__init__(server, converter)
        self._after_response: dict[Any, list[Callable[[], None]]] = {}
        self._methods: dict[Any, str] = {}  # request id -> method, for pygls-run requests in flight
        self.exit_code: int | None = None

    def structure_message(self, data: Any) -> Any:
        """pygls logs a whole traceback at ERROR for every message it can't structure.
        Params of the wrong shape are the client's mistake (answered -32602, or dropped
        for a notification): one warning line. Anything else is a bug, which the caller
        logs under an error id (``error_for``)."""
        try:
            return self.structure_quietly(data)
        except JsonRpcInvalidParams as exc:
            logger.warning("invalid params for %s: %s", data.get("method"), exc.__cause__)
            raise

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(  # type: ignore[override]  # answers with a wire dict, not attrs
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, WireResponse]:
        msg_id = self.msg_id
        try:
            self.server.configure_from_initialize(params)
        except Exception:
            self.server.initialize_refused(msg_id)
            raise
        yield from super().lsp_initialize(params)  # pygls's own state: workspace, client capabilities
        return WireResponse(initialize_response(msg_id, self.unstructure(params), self.server.agent_card))

    def notify(self, method: str, params: Any | None = None) -> None:
        """Send a notification whose params are a plain dict, even for methods that
        lsprotocol types (``$/progress``): pygls would build its attrs class around it.
        The message stays a dict too (cattrs would unstructure an attrs one, about 5 µs
        of each stream item)."""
        if isinstance(params, dict):
            self.send_message({"jsonrpc": "2.0", "method": method, "params": params})
        else:
            super().notify(method, params)

    def suppress_response(self, msg_id: Any) -> None:
        """Don't write the response to ``msg_id``: it has been answered already."""
        self._suppressed.add(msg_id)

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(self, params: types.WorkDoneProgressCancelParams) -> None:
        token = params.token
        if type(token) not in (str, int):  # pygls passes any JSON through
            logger.warning("window/workDoneProgress/cancel: the token must be a string or an integer, not %s",
                           type(token).__name__)
        elif not self.server.cancel_progress(token):
            logger.info("work done progress cancel for an unknown token %s", token)

    @lsp_method(types.INITIALIZED)
    def lsp_initialized(self, *args: Any) -> None:
        self.server.warm_up()

    @lsp_method(types.SHUTDOWN)
    async def lsp_shutdown(self, *args: Any) -> None:  # type: ignore[override]  # awaits in-flight work
        """Refuse new requests, let in-flight ones finish (within a grace period),
        cancel what is left."""
        self.server.runtime.stopping()
        await self.drain(SHUTDOWN_GRACE_SECONDS, keep=self.msg_id)
        self.refuse_all_but_exit()
        return None

    async def drain(self, grace: float, keep: Any = None) -> None:
        """Wait up to ``grace`` seconds for in-flight requests, then cancel the rest."""
        pending = self.requests_in_flight(keep)
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=grace)
        await cancel_and_wait(late)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]  # ends the serve loop, no sys.exit
        # LSP: exit code 0 after a shutdown request, 1 otherwise.
        self.exit_code = 0 if self._draining else 1
        self.server.request_stop()

    @property
    def shutting_down(self) -> bool:
        """True from the moment a shutdown request arrives: new requests are refused."""
        return self._draining

    def request_received(self, msg_id: Any, method: str) -> None:
        if method == types.SHUTDOWN:
            self._draining = True
        self._methods[msg_id] = method

    def request_failed(self, msg_id: Any, method: str, exc: Exception) -> None:
        """An error is answered by ``error_for``, not with pygls's traceback."""
        self._methods.pop(msg_id, None)
        self.send_error(msg_id, error_for(exc, method))

    def notification_failed(self, exc: BaseException) -> None:
        """Nobody waits for an answer, so a bug is logged under an error id and the
        user is told that id (``report_server_error``)."""
        self.server.report_server_error(exc, "a notification")

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if not self._document_is_open(self.workspace.text_documents, params.text_document.uri, "textDocument"):
            return
        yield from super().lsp_text_document__did_change(params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(
        self, params: types.DidChangeNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        if not self._document_is_open(self.workspace.notebook_documents, params.notebook_document.uri, "notebook"):
            return
        yield from super().lsp_notebook_document__did_change(params)

    @staticmethod
    def _document_is_open(documents: dict[str, Any], uri: str, kind: str) -> bool:
        """A change to a document the client never opened is its mistake: one warning
        line (pygls would fail with a KeyError)."""
        from urllib.parse import unquote

        if unquote(uri) in documents:
            return True
        logger.warning("%s/didChange for a document that is not open: %s", kind, uri[:200])
        return False

    def unregistered_handler(self, method: str) -> Any:
        if method.startswith("$/"):
            return None
        # Every A2A method is served by the facade, which also answers -32601
        # (naming the method) for names it doesn't know.
        return self.server.handler_for(method)

    def after_response(self, msg_id: Any, action: Callable[[], None]) -> None:
        """Run ``action`` once the response to ``msg_id`` has been written."""
        self._after_response.setdefault(msg_id, []).append(action)

    def answer(self, future: RequestFuture, msg_id: Any) -> bool:
        """Write what pygls would get wrong: nothing for a suppressed response, an
        error by ``error_for``, a ``WireResponse`` as it is."""
        method = self._methods.pop(msg_id, None)
        if msg_id in self._suppressed:
            self._suppressed.discard(msg_id)
        elif not future.cancelled() and (exc := future.exception()) is not None:
            self.send_error(msg_id, error_for(exc, method or f"request {msg_id!r}"))
        elif not future.cancelled() and isinstance(future.result(), WireResponse):
            wire = future.result()
            if wire.body is not None:
                self._send_body(wire.body)
            else:
                self.send_message(wire.payload)
        else:
            return False
        return True

    def answered(self, msg_id: Any) -> None:
        for action in self._after_response.pop(msg_id, ()):
            try:
                action()
            except Exception:
                logger.exception("after-response action failed for %s", msg_id)

    def _send_body(self, body: bytes) -> None:
        """Frame a UTF-8 JSON body that is ready."""
        if self.writer is None:
            logger.error("Unable to send data, no available transport!")
            return
        self.writer.write(frame_body(body))

    def send_error(self, msg_id: Any, error: dict[str, Any]) -> None:
        """Write an error response (``error`` is the JSON-RPC error object)."""
        self.send_message(envelope.error_response(msg_id, error))


__all__ = ["A2AProtocol", "JsonRpcException", "JsonRpcInternalError", "WireResponse", "error_for",
           "prepared_converter"]
