"""A small real HTTP server that speaks the chat-completions wire format.

It is the tests' double of a service that can't run here (OpenAI, Ollama, vLLM):
a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 with a free port, answering
``POST /v1/chat/completions`` from a script of replies, one per request, in order.
A request with ``"stream": true`` gets SSE chunks (text split into pieces, tool
call arguments split across chunks, usage in the last chunk, then ``[DONE]``);
otherwise one JSON document. Every request body is recorded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDLESS_CAP = 256 * 1024 * 1024  # an endless answer stops here, so that a client that reads it all ends


@dataclass
class Reply:
    """One scripted answer. ``status`` >= 400 answers with an error body; ``raw``
    sends those bytes as the body (bad JSON); ``hang`` holds the stream open after
    the first chunk until the client goes away; ``endless`` sends an answer that
    doesn't end until the client goes away (or ``ENDLESS_CAP`` bytes): an SSE line
    (``"line"``), a JSON body (``"body"``) or an error body (``"error"``)."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "arguments": dict|str}
    usage: dict[str, int] | None = field(default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5})
    status: int = 200
    raw: bytes | None = None
    hang: bool = False
    piece: int = 4  # characters per text chunk
    endless: str | None = None


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.connections: set[tuple[str, int]] = set()  # the client's address of each connection used
        self.closed_early = threading.Event()
        self.sent = 0  # the bytes of ``endless`` answers written
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self.script.extend(replies)
        return self

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.script.pop(0) if self.script else Reply(text="(no scripted reply)")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                fake.connections.add(self.client_address)
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                reply = fake._next(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.status >= 400:
                    return self._send(reply.status, {"error": {"message": f"scripted error {reply.status}",
                                                               "type": "scripted"}})
                if reply.endless is not None:
                    return self._endless(reply.endless)
                if reply.raw is not None:
                    return self._send_bytes(200, reply.raw, "application/json")
                if body.get("stream"):
                    return self._stream(body, reply)
                return self._send(200, _completion(body, reply))

            def _send(self, status: int, document: dict[str, Any]) -> None:
                self._send_bytes(status, json.dumps(document).encode(), "application/json")

            def _send_bytes(self, status: int, data: bytes, media_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _endless(self, kind: str) -> None:
                self.send_response(500 if kind == "error" else 200)
                self.send_header("Content-Type", "text/event-stream" if kind == "line" else "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                piece = b"a" * 65536
                try:
                    self.wfile.write(b"data: " if kind == "line" else b'{"error": {"message": "')
                    while fake.sent < ENDLESS_CAP:
                        self.wfile.write(piece)
                        fake.sent += len(piece)
                except (BrokenPipeError, ConnectionResetError):
                    fake.closed_early.set()
                self.close_connection = True

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for number, chunk in enumerate(_chunks(body, reply)):
                        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                        self.wfile.flush()
                        if reply.hang and number == 1:  # after the first text chunk
                            while not fake._release.wait(0.05):
                                self.wfile.write(b": keep-alive\n\n")
                                self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    fake.closed_early.set()
                self.close_connection = True

        return Handler


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": _arguments(c)}}
            for i, c in enumerate(reply.tool_calls)]
    document: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
    }
    if reply.usage is not None:
        document["usage"] = {**reply.usage, "total_tokens": sum(reply.usage.values())}
    return document


def _chunks(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": body.get("model"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = reply.text
    chunks += [chunk({"content": text[i:i + reply.piece]}) for i in range(0, len(text), reply.piece)]
    for index, call in enumerate(reply.tool_calls):
        arguments = _arguments(call)
        half = len(arguments) // 2
        chunks.append(chunk({"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                             "function": {"name": call["name"], "arguments": arguments[:half]}}]}))
        chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]}))
    chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if reply.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
                       "usage": {**reply.usage, "total_tokens": sum(reply.usage.values())}})
    return chunks
