"""A stdio MCP server made with the official ``mcp`` SDK, for the ACP tests: the
client's MCP server that the session's actor calls."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool(description="Add two integers")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="The value of an environment variable the client gave the server")
def env(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.tool(description="Write size bytes of log lines to stderr, then answer")
def chatter(size: int) -> str:
    line = "calc: a log line that nobody asked for\n"
    sys.stderr.write(line * (size // len(line) + 1))
    sys.stderr.flush()
    return "said"


if __name__ == "__main__":
    server.run("stdio")
