"""The pygls protocol subclass: A2A capabilities in ``initialize``, responses written
straight from the facade's wire dicts, graceful ``exit``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcMethodNotFound,
)
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from cleveragents.a2a import dialects, envelope
from cleveragents.a2a.errors import error_payload, internal_error_payload, is_known
from cleveragents.transports.lsp.framing import frame_body
from cleveragents.transports.lsp.handshake import initialize_response

if TYPE_CHECKING:
    from concurrent.futures import Future

    from cattrs import Converter

    from cleveragents.transports.lsp.server import A2aLanguageServer

logger = logging.getLogger(__name__)
_pygls_logger = logging.getLogger("pygls.protocol.json_rpc")

SHUTDOWN_GRACE_SECONDS = 10.0


class WireResponse:
    """A complete JSON-RPC response, written as it is: a wire dict, or its UTF-8 JSON."""

    __slots__ = ("payload", "body")

    def __init__(self, payload: dict[str, Any] | None = None, *, body: bytes | None = None):
        self.payload = payload
        self.body = body


def plain_dict_converter() -> Converter:
    """pygls's converter, except that custom messages keep their params as dicts
    (pygls would turn them into namedtuples and rename keys such as ``_meta``)."""
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        names = tuple(f.name for f in attrs.fields(cls))
        converter.register_structure_hook(
            cls, lambda obj, c, names=names: c(**{name: obj.get(name) for name in names})
        )
    return converter


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


class A2aProtocol(LanguageServerProtocol):
    _server: A2aLanguageServer

    def __init__(self, server: A2aLanguageServer, converter: Converter):
        self._draining = False  # before super(): it scans our attributes
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
        level = _pygls_logger.level
        _pygls_logger.setLevel(logging.CRITICAL)
        try:
            return super().structure_message(data)
        except JsonRpcInvalidParams as exc:
            logger.warning("invalid params for %s: %s", data.get("method"), exc.__cause__)
            raise
        finally:
            _pygls_logger.setLevel(level)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(  # type: ignore[override]  # answers with a wire dict, not attrs
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, WireResponse]:
        msg_id = self.msg_id
        try:
            self._server.configure_from_initialize(params)
        except Exception:
            self._server.initialize_refused(msg_id)
            raise
        yield from super().lsp_initialize(params)  # pygls's own state: workspace, client capabilities
        return WireResponse(initialize_response(msg_id, self._converter.unstructure(params), self._server.agent_card))

    def notify(self, method: str, params: Any | None = None) -> None:
        """Send a notification whose params are a plain dict, even for methods that
        lsprotocol types (``$/progress``): pygls would build its attrs class around it.
        The message stays a dict too (cattrs would unstructure an attrs one, about 5 µs
        of each stream item)."""
        if isinstance(params, dict):
            self._send_data({"jsonrpc": "2.0", "method": method, "params": params})
        else:
            super().notify(method, params)

    def suppress_response(self, msg_id: Any) -> None:
        """Don't write the response to ``msg_id``: it has been answered already."""
        self._suppressed.add(msg_id)

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(self, params: types.WorkDoneProgressCancelParams) -> None:  # type: ignore[override]
        token = params.token
        if type(token) not in (str, int):  # pygls passes any JSON through
            logger.warning("window/workDoneProgress/cancel: the token must be a string or an integer, not %s",
                           type(token).__name__)
        elif not self._server.cancel_progress(token):
            logger.info("work done progress cancel for an unknown token %s", token)

    @lsp_method(types.INITIALIZED)
    def lsp_initialized(self, *args: Any) -> None:
        self._server.warm_up()

    @lsp_method(types.SHUTDOWN)
    async def lsp_shutdown(self, *args: Any) -> None:  # type: ignore[override]  # awaits in-flight work
        """Refuse new requests, let in-flight ones finish (within a grace period),
        cancel what is left."""
        await self.drain(SHUTDOWN_GRACE_SECONDS, keep=self.msg_id)
        self._shutdown = True
        return None

    async def drain(self, grace: float, keep: Any = None) -> None:
        """Wait up to ``grace`` seconds for in-flight requests, then cancel the rest."""
        pending = [
            asyncio.wrap_future(f) if isinstance(f, concurrent.futures.Future) else f
            for msg_id, f in list(self._request_futures.items())
            if msg_id != keep and not f.done()
        ]
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=grace)
        for future in late:
            future.cancel()
        if late:
            await asyncio.wait(late, timeout=1.0)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]  # ends the serve loop, no sys.exit
        # LSP: exit code 0 after a shutdown request, 1 otherwise.
        self.exit_code = 0 if self._draining else 1
        self._server.request_stop()

    @property
    def shutting_down(self) -> bool:
        """True from the moment a shutdown request arrives: new requests are refused."""
        return self._draining

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        """pygls's, except that an error is answered by ``error_for``, not with a traceback."""
        if method_name == types.SHUTDOWN:
            self._draining = True
        try:
            handler = self._get_handler(method_name)
            self._ctx_msg_id.set(msg_id)
            self._methods[msg_id] = method_name
            self._execute_handler(msg_id=msg_id, handler=handler, args=(params,),
                                  callback=functools.partial(self._send_handler_result, msg_id=msg_id))
        except Exception as exc:
            self._methods.pop(msg_id, None)
            self.send_error(msg_id, error_for(exc, method_name))

    def _check_handler_result(self, future: Future[Any]) -> None:
        """A notification's handler failed: nobody waits for an answer, so a bug is
        logged under an error id and the user is told that id (``report_server_error``)."""
        if not future.cancelled() and (exc := future.exception()) is not None:
            self._server.report_server_error(exc, "a notification")

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(  # type: ignore[override]
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if not self._document_is_open(self.workspace.text_documents, params.text_document.uri, "textDocument"):
            return
        yield from super().lsp_text_document__did_change(params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(  # type: ignore[override]
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

    def start_request(self, msg_id: Any, work: Coroutine[Any, Any, Any]) -> None:
        """Run a request as pygls runs a coroutine handler (``$/cancelRequest`` and
        shutdown find it, ``_send_handler_result`` answers it), without the lookup."""
        context = contextvars.copy_context()
        context.run(self._ctx_msg_id.set, msg_id)  # what ``msg_id`` reads during the request
        task = asyncio.get_running_loop().create_task(work, context=context)
        self._request_futures[msg_id] = task
        task.add_done_callback(functools.partial(self._send_handler_result, msg_id=msg_id))

    def _get_handler(self, feature_name: str) -> Any:
        try:
            return super()._get_handler(feature_name)
        except JsonRpcMethodNotFound:
            if feature_name.startswith("$/"):
                raise
            # Every A2A method is served by the facade, which also answers -32601
            # (naming the method) for names it doesn't know.
            return self._server.handler_for(feature_name)

    def after_response(self, msg_id: Any, action: Callable[[], None]) -> None:
        """Run ``action`` once the response to ``msg_id`` has been written."""
        self._after_response.setdefault(msg_id, []).append(action)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        method = self._methods.pop(msg_id, None)
        try:
            if msg_id in self._suppressed:
                self._suppressed.discard(msg_id)
                self._request_futures.pop(msg_id, None)
            elif not future.cancelled() and (exc := future.exception()) is not None:
                self._request_futures.pop(msg_id, None)
                self.send_error(msg_id, error_for(exc, method or f"request {msg_id!r}"))
            elif not future.cancelled() and isinstance(future.result(), WireResponse):
                self._request_futures.pop(msg_id, None)
                wire = future.result()
                if wire.body is not None:
                    self._send_body(wire.body)
                else:
                    self._send_data(wire.payload)
            else:
                super()._send_handler_result(future, msg_id=msg_id)
        finally:
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
        self._send_data(envelope.error_response(msg_id, error))


__all__ = ["A2aProtocol", "JsonRpcException", "JsonRpcInternalError", "WireResponse", "error_for",
           "plain_dict_converter"]
