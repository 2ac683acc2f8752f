"""The pygls internals the stdio transport relies on are there, in the shape it
expects. ``transports/lsp/pygls_hooks.py`` lists them; a pygls release that changes
one fails here, naming it, rather than in a client."""

from __future__ import annotations

import ast
import contextvars
import inspect
from importlib.metadata import version
from pathlib import Path

import cattrs
import pytest
from lsprotocol import types
from pygls import server as pygls_server
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol import json_rpc as pygls_json_rpc

from cleveragents.transports.lsp import pygls_hooks
from cleveragents.transports.lsp.protocol import A2AProtocol

PYGLS = version("pygls")
LSP_DIR = Path(pygls_hooks.__file__).parent
P, K = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY

# name -> the parameters (name, kind) the adapter calls or overrides it with.
METHODS = {
    "_handle_request": [("self", P), ("msg_id", P), ("method_name", P), ("params", P)],
    "_get_handler": [("self", P), ("feature_name", P)],
    "_send_handler_result": [("self", P), ("future", P), ("msg_id", K)],
    "_check_handler_result": [("self", P), ("future", P)],
    "_execute_handler": [("self", P), ("msg_id", P), ("handler", P), ("callback", P), ("args", P),
                         ("kwargs", P)],
    "_send_data": [("self", P), ("data", P)],
    "structure_message": [("self", P), ("data", P)],
    "handle_message": [("self", P), ("message", P)],
}
# The builtin LSP handlers the protocol overrides: pygls finds a handler by the
# ``method_name`` its ``@lsp_method`` gives it, so ours must keep pygls's attribute name.
LSP_HANDLERS = {
    "lsp_initialize": types.INITIALIZE,
    "lsp_initialized": types.INITIALIZED,
    "lsp_shutdown": types.SHUTDOWN,
    "lsp_exit": types.EXIT,
    "lsp_work_done_progress_cancel": types.WINDOW_WORK_DONE_PROGRESS_CANCEL,
    "lsp_text_document__did_change": types.TEXT_DOCUMENT_DID_CHANGE,
    "lsp_notebook_document__did_change": types.NOTEBOOK_DOCUMENT_DID_CHANGE,
}


def _shape(params: list[tuple[str, inspect._ParameterKind]]) -> str:
    """``(self, future, *, msg_id)``, for a readable failure."""
    parts: list[str] = []
    for name, kind in params:
        if kind is K and "*" not in parts:
            parts.append("*")
        parts.append(name)
    return f"({', '.join(parts)})"


def _changed(hook: str, expected: object, found: object) -> str:
    return (f"pygls {PYGLS}: the hook {hook} changed shape (expected {expected}, found {found}); "
            "see transports/lsp/pygls_hooks.py before widening the pygls pin")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_method_the_adapter_uses_keeps_its_signature(name: str) -> None:
    method = getattr(LanguageServerProtocol, name, None)
    assert callable(method), f"pygls {PYGLS}: LanguageServerProtocol.{name} is gone; see pygls_hooks.py"
    found = [(p.name, p.kind) for p in inspect.signature(method).parameters.values()]
    assert found == METHODS[name], _changed(name, _shape(METHODS[name]), _shape(found))


@pytest.mark.parametrize("name", sorted(LSP_HANDLERS))
def test_each_overridden_lsp_handler_keeps_its_name_and_method(name: str) -> None:
    theirs = getattr(LanguageServerProtocol, name, None)
    assert theirs is not None, f"pygls {PYGLS}: LanguageServerProtocol.{name} is gone; ours would be a second handler"
    assert getattr(theirs, "method_name", None) == LSP_HANDLERS[name], _changed(
        name, LSP_HANDLERS[name], getattr(theirs, "method_name", None))


def test_the_protocol_state_the_adapter_reads_has_its_types() -> None:
    server = LanguageServer("probe", "0")
    protocol = server.protocol
    assert protocol._server is server, _changed("_server", "the server", protocol._server)
    assert isinstance(protocol._converter, cattrs.Converter), _changed("_converter", "a cattrs Converter",
                                                                       type(protocol._converter))
    assert protocol._shutdown is False, _changed("_shutdown", "False", protocol._shutdown)
    assert isinstance(protocol._request_futures, dict), _changed("_request_futures", "a dict",
                                                                 type(protocol._request_futures))
    assert isinstance(protocol._ctx_msg_id, contextvars.ContextVar), _changed(
        "_ctx_msg_id", "a ContextVar", type(protocol._ctx_msg_id))
    # ``msg_id`` (public) reads what ``start_request`` sets.
    context = contextvars.copy_context()
    context.run(protocol._ctx_msg_id.set, "probe-7")
    assert context.run(lambda: protocol.msg_id) == "probe-7", _changed("_ctx_msg_id", "what msg_id reads", "not")


def test_pygls_still_acts_on_the_state_the_adapter_sets() -> None:
    """What the adapter sets only matters because pygls reads it."""
    handle = inspect.getsource(JsonRPCProtocol.handle_message)
    assert "self._shutdown" in handle, _changed("_shutdown", "read by handle_message", "not read")
    cancel = inspect.getsource(JsonRPCProtocol._handle_cancel_notification)
    assert "self._request_futures" in cancel, _changed("_request_futures", "read by $/cancelRequest", "not read")
    execute = inspect.getsource(JsonRPCProtocol._handle_request)
    assert "_ctx_msg_id" in execute, _changed("_ctx_msg_id", "set per request by _handle_request", "not set")


def test_the_server_error_hook_and_the_logger_are_where_the_adapter_looks() -> None:
    found = [(p.name, p.kind) for p in inspect.signature(LanguageServer.report_server_error).parameters.values()]
    expected = [("self", P), ("error", P), ("source", P)]
    assert found == expected, _changed("report_server_error", _shape(expected), _shape(found))
    assert "self.report_server_error" in inspect.getsource(pygls_server.JsonRPCServer._report_server_error)
    assert pygls_json_rpc.logger.name == pygls_hooks.PYGLS_LOGGER.name, _changed(
        "the json_rpc logger", pygls_hooks.PYGLS_LOGGER.name, pygls_json_rpc.logger.name)


def test_custom_messages_keep_their_params_as_a_dict() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"_meta": {"k": 1}}}
    structured = pygls_hooks.plain_dict_converter().structure(message, JsonRPCRequestMessage)
    assert structured.params == {"_meta": {"k": 1}}, _changed("JsonRPCRequestMessage's fields", "params kept",
                                                               structured)


def test_the_protocol_is_built_on_the_adapter() -> None:
    assert issubclass(A2AProtocol, pygls_hooks.PyglsProtocol)


def _pygls_private_names() -> set[str]:
    server = LanguageServer("probe", "0")
    names = set(vars(server)) | set(vars(server.protocol))
    for cls in (LanguageServer, LanguageServerProtocol):
        names |= set(dir(cls))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _private_names_used(path: Path, private: set[str]) -> set[str]:
    used = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in private:
            used.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in private:
            used.add(node.name)
    return used


def test_no_other_transport_module_touches_a_pygls_private_name() -> None:
    """Also catches one of our attributes that would shadow pygls's by accident."""
    private = _pygls_private_names()
    offenders = {path.name: used for path in sorted(LSP_DIR.glob("*.py"))
                 if path.name != "pygls_hooks.py" and (used := _private_names_used(path, private))}
    assert not offenders, f"pygls private names outside pygls_hooks.py: {offenders}"


def test_the_adapter_lists_every_private_name_it_uses() -> None:
    used = _private_names_used(LSP_DIR / "pygls_hooks.py", _pygls_private_names())
    doc = pygls_hooks.__doc__ or ""
    assert used, "the adapter uses no pygls private name: is this test still looking?"
    assert not {n for n in used if f"``{n}" not in doc}, f"used but not listed in the docstring: {used}"


VSCODE_LIKE_INITIALIZE = {
    "processId": 1, "rootUri": "file:///tmp/ws", "clientInfo": {"name": "editor"},
    "capabilities": {
        "workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create"]},
                      "configuration": True, "workspaceFolders": True},
        "textDocument": {"synchronization": {"didSave": True}, "hover": {"contentFormat": ["markdown"]}},
        "window": {"workDoneProgress": True}, "general": {"positionEncodings": ["utf-16"]},
    },
}


def test_a_prepared_converter_already_has_the_hooks_of_the_clients_initialize(monkeypatch):
    """cattrs generates an attrs class's hooks the first time it meets a value; the
    pygls server converts ``initialize`` on the event loop, so the entry point
    prepares its converter with the client's params in a worker thread first."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": VSCODE_LIKE_INITIALIZE}
    pygls_hooks.prepare_converter(VSCODE_LIKE_INITIALIZE)
    prepared = pygls_hooks.prepared_converter()
    made: list[object] = []
    for name in ("make_dict_structure_fn", "make_dict_unstructure_fn"):
        real = getattr(cattrs.gen, name)
        monkeypatch.setattr(cattrs.gen, name, lambda cls, *a, _real=real, **k: made.append(cls) or _real(cls, *a, **k))

    prepared.unstructure(prepared.structure(message, types.InitializeRequest).params)
    assert made == []
    fresh = pygls_hooks.prepared_converter()  # taken once: the next server gets a new one
    assert fresh is not prepared
    fresh.unstructure(fresh.structure(message, types.InitializeRequest).params)
    assert types.ClientCapabilities in made  # what the prepared one was spared
