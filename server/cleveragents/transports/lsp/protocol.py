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
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from cleveragents.a2a import envelope
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


class A2aProtocol(LanguageServerProtocol):
    _server: A2aLanguageServer

    def __init__(self, server: A2aLanguageServer, converter: Converter):
        self._draining = False  # before super(): it scans our attributes
        self._suppressed: set[Any] = set()
        super().__init__(server, converter)
        self._after_response: dict[Any, list[Callable[[], None]]] = {}
        self.exit_code: int | None = None

    def structure_message(self, data: Any) -> Any:
        """pygls logs a whole traceback at ERROR for every message it can't structure.
        Params of the wrong shape are the client's mistake (answered -32602, or dropped
        for a notification): one warning line. Anything else is still logged as a bug."""
        level = _pygls_logger.level
        _pygls_logger.setLevel(logging.CRITICAL)
        try:
            return super().structure_message(data)
        except JsonRpcInvalidParams as exc:
            logger.warning("invalid params for %s: %s", data.get("method"), exc.__cause__)
            raise
        except JsonRpcException as exc:
            logger.error("cannot read a message for %s", data.get("method"), exc_info=exc.__cause__ or exc)
            raise
        finally:
            _pygls_logger.setLevel(level)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(  # type: ignore[override]  # answers with a wire dict, not attrs
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, WireResponse]:
        msg_id = self.msg_id
        self._server.configure_from_initialize(params)
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
        if not self._server.cancel_progress(params.token):
            logger.info("work done progress cancel for an unknown token %s", params.token)

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
        if method_name == types.SHUTDOWN:
            self._draining = True
        super()._handle_request(msg_id, method_name, params)

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
        try:
            if msg_id in self._suppressed:
                self._suppressed.discard(msg_id)
                self._request_futures.pop(msg_id, None)
            elif not future.cancelled() and future.exception() is None and isinstance(future.result(), WireResponse):
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


__all__ = ["A2aProtocol", "JsonRpcException", "WireResponse", "plain_dict_converter"]
