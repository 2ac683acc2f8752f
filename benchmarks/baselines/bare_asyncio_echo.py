"""The floor for bench_stdio.py: a stdio JSON-RPC server in plain asyncio, no framework.

It reads stdin through an asyncio StreamReader, parses each Content-Length frame with
``json.loads`` and answers it at once with ``json.dumps`` through a non-blocking
stdout transport, so many requests are in flight at a time, as with any async server.
It knows three requests (``initialize``, ``shutdown`` and
``_cleveragents/health/check``), ignores notifications and stops at ``exit``. What it
costs per request is what the stdio transport itself costs in Python. Stdin and stdout
must be pipes, as they are under the benchmark.
"""

import asyncio
import json
import sys

RESULTS = {
    "initialize": {"capabilities": {}},
    "shutdown": None,
    "_cleveragents/health/check": {"status": "ok"},
}


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One message body, or None at the end of stdin."""
    length = None
    while True:  # header lines up to the blank line; only Content-Length matters
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ValueError("frame without Content-Length")
    return await reader.readexactly(length)


async def serve() -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    shut_down = False
    while (body := await read_frame(reader)) is not None:
        msg = json.loads(body)
        method = msg.get("method")
        if method == "exit":
            break
        if "id" not in msg:  # a notification (or a response): nothing to answer
            continue
        shut_down = shut_down or method == "shutdown"
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        if method in RESULTS:
            reply["result"] = RESULTS[method]
        else:
            reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
        data = json.dumps(reply, separators=(",", ":")).encode()
        # One non-blocking write per frame; the transport buffers what the client hasn't read yet.
        out.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    out.close()
    return 0 if shut_down else 1  # LSP: exit without a shutdown first is an error


if __name__ == "__main__":
    sys.exit(asyncio.run(serve()))
