"""Which framing a stdio client speaks, from the first bytes it sends.

An LSP client (and an A2A client on stdio) starts with a header block,
``Content-Length: N``; an Agent Client Protocol client sends newline-delimited
JSON-RPC, so its first byte after any whitespace is ``{``. One byte decides, so a
first read cut short ("Cont", or "{" alone) is enough. Everything read here is
handed on to the server that is chosen: nothing the client sent is lost.
"""

from __future__ import annotations

from typing import Any

LSP, ACP = "lsp", "acp"
PROTOCOLS = (LSP, ACP)
_WHITESPACE = b" \t\r\n"
# Whitespace alone never decides; past this much of it the input is read as LSP,
# whose reader answers what it can't frame.
MAX_LEADING_WHITESPACE = 4096


async def detect(reader: Any) -> tuple[str | None, bytes]:
    """``(protocol, the bytes read)``; ``(None, ...)`` at end of input before any
    deciding byte (a terminal's Ctrl-D can't be read twice, so nobody should read on).

    ``reader`` has ``read(n)``: an ``asyncio.StreamReader`` or ``framing.ThreadedReader``.
    Bytes are read one at a time so that nothing beyond the deciding byte is taken
    out of the reader's buffer."""
    head = bytearray()
    while len(head) <= MAX_LEADING_WHITESPACE:
        byte = await reader.read(1)
        if not byte:
            return None, bytes(head)
        head += byte
        if byte not in _WHITESPACE:
            return (ACP if byte == b"{" else LSP), bytes(head)
    return LSP, bytes(head)
