"""Every use of pygls's private members, in one place.

The stdio server is a pygls 2.x ``LanguageServerProtocol`` that serves A2A requests
its own way. pygls has no public hooks for that, so this class reaches into its
internals; nothing else in the transport does. pyproject.toml pins pygls to the
releases these were checked against, and ``tests/unit/test_pygls_hooks.py`` fails,
naming the hook, when one is gone or has changed shape.

Overridden (pygls calls them; each override keeps pygls's contract):

- ``_handle_request(msg_id, method_name, params)``: runs a request. Here an
  exception is answered by ``request_failed``, not with pygls's traceback in ``data``.
- ``_get_handler(feature_name)``, which raises ``JsonRpcMethodNotFound`` for an
  unknown name: a method pygls doesn't know goes to ``unregistered_handler``.
- ``_send_handler_result(future, *, msg_id)``: a request's done-callback, which
  writes its response. ``answer`` may write it instead (a wire dict, ready JSON
  bytes, an error, or nothing for an ``initialize`` answered already).
- ``_check_handler_result(future)``: a notification's done-callback. A failure goes
  to ``notification_failed``, not to pygls's "Error in server" message.

Used as they are:

- ``_execute_handler(msg_id=, handler=, callback=, args=)``: runs a handler of any
  kind (coroutine, generator, thread, plain function).
- ``_ctx_msg_id``, a ``ContextVar``: what the public ``msg_id`` reads in a request.
- ``_request_futures``, msg id -> future: where ``$/cancelRequest`` and ``shutdown``
  find a request in flight.
- ``_shutdown``, a bool: once true, ``handle_message`` drops all but ``exit``.
- ``_send_data(message)``: JSON-encodes a message and frames it.
- ``_converter``: the cattrs converter, to unstructure ``InitializeParams``.
- ``_server``: the server the protocol belongs to.
- ``__init__`` reads every attribute (``getattr`` over ``dir(self)``, to find
  ``@lsp_method`` handlers): a subclass's properties must work before it returns.
- The structure hooks of ``JsonRPCRequestMessage``, ``JsonRPCNotification`` and
  ``JsonRPCResponseMessage`` (attrs classes): ``plain_dict_converter`` replaces them.
- ``structure_message`` logs its failures on the ``pygls.protocol.json_rpc`` logger.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import attrs
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    from cattrs import Converter

    # pygls types a request's future as a concurrent one, and keeps asyncio's (a
    # coroutine handler's task) in the same places: both are answered alike.
    RequestFuture = Future[Any] | asyncio.Future[Any]

PYGLS_LOGGER = logging.getLogger("pygls.protocol.json_rpc")
logger = logging.getLogger(__name__)


def plain_dict_converter() -> Converter:
    """pygls's converter, except that custom messages keep their params as dicts
    (pygls would turn them into namedtuples and rename keys such as ``_meta``)."""
    converter: Converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        names = tuple(f.name for f in attrs.fields(cls))
        converter.register_structure_hook(
            cls, lambda obj, c, names=names: c(**{name: obj.get(name) for name in names})
        )
    return converter


_prepared: Converter | None = None


def prepare_converter(initialize_params: Any = None) -> None:
    """Make the converter of the next pygls server, in the caller's (worker) thread.

    cattrs generates a class's hooks the first time it meets one of its values, and
    ``initialize``'s params nest most of lsprotocol: about 450 ms of code generation,
    which ran on the event loop as the pygls server took over ``initialize`` from the
    early handshake, and every request waited (a plan's first execute included).
    Converting this client's params once here generates the very hooks it will need.
    """
    global _prepared
    from lsprotocol import types

    converter = plain_dict_converter()
    if initialize_params is not None:
        message = {"jsonrpc": "2.0", "id": 0, "method": types.INITIALIZE, "params": initialize_params}
        try:
            converter.unstructure(converter.structure(message, types.InitializeRequest).params)
        except Exception:  # refused later, on the loop, as any malformed initialize is
            logger.debug("initialize params that don't convert: left for the server to refuse")
    _prepared = converter


def prepared_converter() -> Converter:
    """The converter ``prepare_converter`` made (taken once), else a new one."""
    global _prepared
    converter, _prepared = _prepared, None
    return converter if converter is not None else plain_dict_converter()


class PyglsProtocol(LanguageServerProtocol):
    """pygls's protocol with the hooks the stdio server needs, under public names.
    A subclass overrides the ``request_*``, ``answer*``, ``unregistered_handler`` and
    ``notification_failed`` methods; it touches no private pygls name."""

    # -- what a subclass decides -------------------------------------------------------
    def request_received(self, msg_id: Any, method: str) -> None:
        """A request pygls runs has arrived (before its handler is looked up)."""

    def request_failed(self, msg_id: Any, method: str, exc: Exception) -> None:
        """Looking up or starting the handler failed: answer ``msg_id``."""
        raise NotImplementedError

    def unregistered_handler(self, method: str) -> Callable[..., Any] | None:
        """The handler for a method pygls doesn't know; None for -32601."""
        return None

    def answer(self, future: RequestFuture, msg_id: Any) -> bool:
        """Write the response of a finished request; False lets pygls write it."""
        return False

    def answered(self, msg_id: Any) -> None:
        """The request ``msg_id`` is over (its response, if any, is written)."""

    def notification_failed(self, exc: BaseException) -> None:
        """A notification's handler raised ``exc``."""

    # -- what it may call ----------------------------------------------------------------
    @property
    def server(self) -> Any:
        return self._server

    def send_message(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message (a plain dict)."""
        self._send_data(message)

    def unstructure(self, value: Any) -> Any:
        return self._converter.unstructure(value)

    def refuse_all_but_exit(self) -> None:
        """From now on pygls drops every message but ``exit``."""
        self._shutdown = True

    def requests_in_flight(self, keep: Any = None) -> list[asyncio.Future[Any]]:
        """The unfinished requests other than ``keep``, as asyncio futures."""
        return [
            asyncio.wrap_future(f) if isinstance(f, concurrent.futures.Future) else f
            for msg_id, f in list(self._request_futures.items())
            if msg_id != keep and not f.done()
        ]

    def start_request(self, msg_id: Any, work: Coroutine[Any, Any, Any]) -> None:
        """Run a request as pygls runs a coroutine handler (``$/cancelRequest`` and
        shutdown find it, ``_send_handler_result`` answers it), without the lookup."""
        context = contextvars.copy_context()
        context.run(self._ctx_msg_id.set, msg_id)  # what ``msg_id`` reads during the request
        task = asyncio.get_running_loop().create_task(self._answered(msg_id, work), context=context)
        self._request_futures[msg_id] = task  # type: ignore[assignment]  # see RequestFuture
        task.add_done_callback(functools.partial(self._unanswered, msg_id=msg_id))

    async def _answered(self, msg_id: Any, work: Coroutine[Any, Any, Any]) -> bool:
        """``work``, answered in its own last step (then ``True``): a done-callback
        would wait for another pass of the event loop. A cancelled request is answered
        by ``_unanswered``, as pygls answers one."""
        outcome = asyncio.get_running_loop().create_future()
        try:
            outcome.set_result(await work)
        except Exception as exc:
            outcome.set_exception(exc)
        self._send_handler_result(outcome, msg_id=msg_id)
        return True

    def _unanswered(self, task: asyncio.Future[Any], *, msg_id: Any) -> None:
        if task.cancelled() or task.exception() is not None or task.result() is not True:
            self._send_handler_result(task, msg_id=msg_id)

    def adopt_request(self, msg_id: Any, task: asyncio.Future[Any]) -> None:
        """Take on a request that started before this protocol existed (``early.py``):
        from now on it is answered, cancelled and drained like the others."""
        self._request_futures[msg_id] = task  # type: ignore[assignment]  # see RequestFuture
        task.add_done_callback(functools.partial(self._send_handler_result, msg_id=msg_id))

    def structure_quietly(self, data: Any) -> Any:
        """``structure_message`` without pygls's traceback at ERROR on a failure
        (the caller says what went wrong)."""
        level = PYGLS_LOGGER.level
        PYGLS_LOGGER.setLevel(logging.CRITICAL)
        try:
            return super().structure_message(data)
        finally:
            PYGLS_LOGGER.setLevel(level)

    # -- pygls's internals -------------------------------------------------------------
    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        self.request_received(msg_id, method_name)
        try:
            handler = self._get_handler(method_name)
            self._ctx_msg_id.set(msg_id)
            self._execute_handler(msg_id=msg_id, handler=handler, args=(params,),
                                  callback=functools.partial(self._send_handler_result, msg_id=msg_id))
        except Exception as exc:
            self.request_failed(msg_id, method_name, exc)

    def _get_handler(self, feature_name: str) -> Any:
        try:
            return super()._get_handler(feature_name)
        except JsonRpcMethodNotFound:
            if (handler := self.unregistered_handler(feature_name)) is None:
                raise
            return handler

    def _send_handler_result(self, future: RequestFuture, *, msg_id: Any) -> None:
        try:
            self._request_futures.pop(msg_id, None)  # as pygls's does, first
            if not self.answer(future, msg_id):
                super()._send_handler_result(future, msg_id=msg_id)  # type: ignore[arg-type]  # see RequestFuture
        finally:
            self.answered(msg_id)

    def _check_handler_result(self, future: Future[Any]) -> None:
        if not future.cancelled() and (exc := future.exception()) is not None:
            self.notification_failed(exc)


__all__ = ["PYGLS_LOGGER", "PyglsProtocol", "plain_dict_converter", "prepare_converter", "prepared_converter"]
