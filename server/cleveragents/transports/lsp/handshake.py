"""The `initialize` answer, built without pygls so it can go out before pygls loads.

Importing pygls (and lsprotocol's ~500 attrs classes) is most of a cold start. The
answer depends only on the client's params and the method table, so the entry point
sends it as soon as the request arrives and lets pygls catch up (see ``main.py``).
The same function answers ``initialize`` when it arrives later, so both paths agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cleveragents._version import __version__
from cleveragents.a2a import envelope, extensions
from cleveragents.a2a.capabilities import a2a_capabilities
from cleveragents.a2a.errors import A2AError

SERVER_NAME = "cleveragents"
POSITION_ENCODINGS = ("utf-8", "utf-16", "utf-32")
# Incremental sync, so open buffers can be tracked for edits made through the editor.
TEXT_DOCUMENT_SYNC = {"openClose": True, "change": 2, "save": False}


def position_encoding(client_capabilities: Any) -> str:
    """The client's first supported choice, else UTF-16 (the LSP default)."""
    general = client_capabilities.get("general") if isinstance(client_capabilities, dict) else None
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    for encoding in offered if isinstance(offered, list) else ():
        if encoding in POSITION_ENCODINGS:
            return str(encoding)
    return "utf-16"


def connection_extensions(options: Any) -> tuple[str, ...]:
    """The extensions ``initializationOptions.a2aExtensions`` activates for the
    connection (a list of uris, or comma-separated text); a bad value is -32602."""
    value = options.get(extensions.INIT_OPTION) if isinstance(options, dict) else None
    try:
        return extensions.requested(value, f"initializationOptions.{extensions.INIT_OPTION}")
    except A2AError as exc:
        from cleveragents.transports.lsp.protocol import JsonRpcException

        raise JsonRpcException(message=exc.message, code=-32602, data=exc.data) from None


def requested_version(options: Any) -> str | None:
    """The A2A version ``initializationOptions.a2aVersion`` asks for, if any; an
    unsupported one is -32009."""
    if not isinstance(options, dict) or options.get("a2aVersion") is None:
        return None
    from cleveragents.a2a.version import A2AVersionNegotiator

    try:
        return A2AVersionNegotiator().check_requested(options["a2aVersion"])
    except A2AError as exc:
        from cleveragents.transports.lsp.protocol import JsonRpcException

        raise JsonRpcException(message=exc.message, code=-32009, data=exc.data) from None


def workspace_root(params: dict[str, Any]) -> Path | None:
    """The workspace ``initialize`` names: ``rootUri``, else the first workspace
    folder, else ``rootPath``."""
    from pygls.uris import to_fs_path  # light: not the server's modules

    folders = params.get("workspaceFolders")
    first = folders[0] if isinstance(folders, list) and folders and isinstance(folders[0], dict) else {}
    uri = params.get("rootUri") or first.get("uri")
    if isinstance(uri, str) and uri:
        path = to_fs_path(uri)
        return Path(path) if path else None
    root = params.get("rootPath")
    return Path(root) if isinstance(root, str) and root else None


def initialize_result(params: dict[str, Any], agent_card: dict[str, Any] | None = None) -> dict[str, Any]:
    a2a = a2a_capabilities(agent_card)
    if requested := connection_extensions(params.get("initializationOptions")):
        # The echo of the activation, as the A2A-Extensions header is over HTTP.
        supported = {ext.get("uri") for ext in a2a["agentCard"].get("capabilities", {}).get("extensions", ())}
        a2a["activeExtensions"] = [uri for uri in requested if uri in supported]
    return {
        "capabilities": {
            "positionEncoding": position_encoding(params.get("capabilities")),
            "textDocumentSync": dict(TEXT_DOCUMENT_SYNC),
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}},
            "experimental": {"a2a": a2a},
        },
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def initialize_response(msg_id: Any, params: dict[str, Any], agent_card: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole JSON-RPC response to ``initialize``."""
    return {"jsonrpc": "2.0", "id": msg_id, "result": initialize_result(params, agent_card)}


def early_initialize(body: bytes) -> tuple[Any, dict[str, Any]] | None:
    """``(id, params)`` when ``body`` is a well-formed initialize request that can be
    answered at once; ``None`` sends it down the ordinary path (which reports errors)."""
    try:
        message = envelope.decode(body)
        if envelope.classify(message) != "request" or message["method"] != "initialize":
            return None
    except Exception:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    if not _shaped(params, "processId", int) or not _shaped(params, "rootUri", str) \
            or not _shaped(params, "rootPath", str) or not _shaped(params, "workspaceFolders", list) \
            or not _shaped(params, "clientInfo", dict) or not _shaped(params, "initializationOptions", dict):
        return None  # the ordinary path names the field
    options = params.get("initializationOptions")
    if isinstance(options, dict) and options.get("a2aVersion") is not None:
        from cleveragents.a2a.version import A2AVersionNegotiator

        version = options["a2aVersion"]
        if not isinstance(version, str) or not A2AVersionNegotiator().is_supported(version):
            return None  # the ordinary path answers with the version error
    try:
        connection_extensions(options)
    except Exception:
        return None  # the ordinary path names the bad value
    return message["id"], params


def _shaped(params: dict[str, Any], name: str, kind: type) -> bool:
    value = params.get(name)
    return value is None or (isinstance(value, kind) and not isinstance(value, bool))
