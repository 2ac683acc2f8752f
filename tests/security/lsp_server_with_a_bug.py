"""The stdio server with a deliberate bug in two LSP handlers, for the attack tests:
what a client sees of an unexpected error in a handler that pygls runs (a request,
``textDocument/hover``, and a notification, ``textDocument/didSave``). Each opens a
file under an absolute path that does not exist, so the exception names that path.

Run as ``python lsp_server_with_a_bug.py [cleveragents-lsp arguments]``.
"""

from __future__ import annotations

import sys
from typing import Any

from lsprotocol import types

from cleveragents.transports.lsp import server as lsp_server
from cleveragents.transports.lsp.main import main

PRIVATE = "/srv/cleveragents-private/notes.txt"


class ServerWithABug(lsp_server.A2ALanguageServer):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)

        @self.feature(types.TEXT_DOCUMENT_HOVER)
        def hover(params: types.HoverParams) -> None:
            with open(PRIVATE):  # FileNotFoundError naming PRIVATE
                return None

        @self.feature(types.TEXT_DOCUMENT_DID_SAVE)
        def saved(params: types.DidSaveTextDocumentParams) -> None:
            with open(PRIVATE):
                return None


lsp_server.A2ALanguageServer = ServerWithABug  # type: ignore[misc]  # main.py looks the class up at start

if __name__ == "__main__":
    sys.exit(main())
