"""The HTTP transport (starlette, served by uvicorn): JSON-RPC, HTTP+JSON, SSE, cards."""
