"""``openai/<model>``: any OpenAI-compatible chat-completions endpoint.

The same provider serves OpenAI, Ollama, vLLM, llama.cpp and LM Studio: only the
base URL and the key differ. Replies stream (SSE ``data:`` chunks up to ``[DONE]``);
the model's tool calls run through the turn's ``invoke`` and their results go back
as ``tool`` messages, for at most ``max_tool_rounds`` rounds. Usage comes from the
last chunk (``stream_options.include_usage``). httpx is imported on the first call.
What the endpoint answers is read up to ``MAX_ANSWER_BYTES`` (an SSE line, a whole
body) and an error body up to ``MAX_ERROR_BODY_BYTES``: an answer that never ends
fails the turn instead of filling memory.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cleveragents.domain.actor import ActorError, ActorEvent, TextChunk, ToolCall, Turn, Usage
from cleveragents.domain.bounded_read import read_up_to
from cleveragents.domain.errors import StructuredError
from cleveragents.domain.event_stream import SseTooLargeError, sse_lines
from cleveragents.http_clients import KEEPALIVE_SECONDS, tls_context
from cleveragents.infra.actors.chat import conversation, function_definitions, tool_result_message

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
MAX_ERROR_CHARS = 500
MAX_ANSWER_BYTES = 16 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024  # enough for any provider's error document


@dataclass(frozen=True, slots=True)
class ChatSettings:
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = DEFAULT_KEY_ENV  # the key is read when a call is made, never stored
    timeout: float = 120.0
    max_tool_rounds: int = 8
    stream: bool = True
    input_cost_per_mtok: float = 0.0  # when the provider reports no cost itself
    output_cost_per_mtok: float = 0.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Reply:
    """One assistant message as it arrives: its text and its tool calls by index."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add_call_delta(self, delta: Mapping[str, Any]) -> None:
        call = self.calls.setdefault(int(delta.get("index", len(self.calls))), {"id": "", "name": "", "arguments": ""})
        call["id"] = delta.get("id") or call["id"]
        function = delta.get("function") or {}
        call["name"] += function.get("name") or ""
        call["arguments"] += function.get("arguments") or ""


def model_client(_key: object = None) -> httpx.AsyncClient:
    """A client for model calls: headers and time limits go with each request, so one
    serves every endpoint and key (``KeptClients`` keeps it between turns)."""
    import httpx

    return httpx.AsyncClient(verify=tls_context(), follow_redirects=False,
                             limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))


class OpenAIActor:
    def __init__(self, name: str, model: str, settings: ChatSettings | None = None,
                 http: Callable[[], Any] | None = None):
        """``http`` gives the client to call through (a kept ``model_client``), shared
        with other actors so that connections outlive a turn; without it, each turn
        makes its own."""
        self.name = name
        self.model = model
        self.settings = settings or ChatSettings()
        self._http = http

    async def respond(self, turn: Turn) -> AsyncIterator[ActorEvent]:
        import httpx

        definitions, names = function_definitions(tuple(turn.tools)) if turn.invoke is not None else ([], {})
        messages = conversation(turn)
        headers = {"Content-Type": "application/json"}
        if key := os.environ.get(self.settings.api_key_env, ""):
            headers["Authorization"] = f"Bearer {key}"
        timeout = httpx.Timeout(self.settings.timeout, connect=min(10.0, self.settings.timeout))
        request = {"headers": headers, "timeout": timeout}
        shared = self._http() if self._http is not None else None
        async with (contextlib.nullcontext(shared) if shared is not None
                    else model_client()) as client:
            for _round in range(self.settings.max_tool_rounds + 1):
                reply = _Reply()
                async for event in self._complete(client, messages, definitions, reply, request):
                    yield event
                if not reply.calls:
                    return
                calls = [reply.calls[i] for i in sorted(reply.calls)]
                rationale = "".join(reply.text).strip()
                messages.append({"role": "assistant", "content": rationale or None, "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls]})
                for call in calls:
                    event, result = await self._run_call(turn, names, call, rationale)
                    yield event
                    messages.append(tool_result_message(call["id"], result))
        raise ActorError(f"{self.name} kept calling tools past the limit of {self.settings.max_tool_rounds} rounds",
                         {"actor": self.name, "reason": "tool_call_limit", "limit": self.settings.max_tool_rounds})

    async def _run_call(self, turn: Turn, names: Mapping[str, str], call: Mapping[str, Any],
                        rationale: str) -> tuple[ToolCall, dict[str, Any]]:
        tool = names.get(call["name"], call["name"])
        result: dict[str, Any]
        try:
            arguments = json.loads(call["arguments"] or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("the arguments are not a JSON object")
        except ValueError as exc:
            result = {"error": f"the arguments are not valid JSON: {exc}"}
            return ToolCall(tool, {"raw": call["arguments"]}, result, rationale, failed=True), result
        if tool not in set(names.values()):
            result = {"error": f"there is no tool named {call['name']!r}"}
            return ToolCall(tool, arguments, result, rationale, failed=True), result
        assert turn.invoke is not None
        try:
            result = await turn.invoke(tool, arguments)
        except StructuredError as exc:  # a refusal the model is told about and may work around
            result = {"error": exc.message, "data": exc.data}
            return ToolCall(tool, arguments, result, rationale, failed=True), result
        return ToolCall(tool, arguments, result, rationale), result

    async def _complete(self, client: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                        reply: _Reply, request: Mapping[str, Any]) -> AsyncIterator[ActorEvent]:
        import httpx

        body: dict[str, Any] = {**self.settings.extra_body, "model": self.model, "messages": messages,
                                "stream": self.settings.stream}
        if self.settings.stream:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        try:
            async with client.stream("POST", url, json=body, **request) as response:
                if response.status_code >= 400:
                    error_body, _ = await read_up_to(response.aiter_bytes(), MAX_ERROR_BODY_BYTES)
                    raise self._status_error(response.status_code, error_body, response.headers)
                if "text/event-stream" in response.headers.get("content-type", ""):
                    async for chunk in _sse_chunks(response, self.name):
                        async for event in self._chunk_events(chunk, reply):
                            yield event
                else:  # a server that answers whole, streamed or not
                    whole, more = await read_up_to(response.aiter_bytes(), MAX_ANSWER_BYTES)
                    if more:
                        raise _bad_response(self.name, f"the response exceeds {MAX_ANSWER_BYTES} bytes", whole)
                    async for event in self._message_events(_json(whole, self.name), reply):
                        yield event
        except httpx.TimeoutException:
            raise ActorError(f"{self.name}: the model endpoint did not answer in time",
                             {"actor": self.name, "reason": "timeout", "base_url": self.settings.base_url}) from None
        except httpx.TransportError as exc:
            raise ActorError(f"{self.name}: can't reach the model endpoint at {self.settings.base_url}",
                             {"actor": self.name, "reason": "unreachable", "base_url": self.settings.base_url,
                              "error": type(exc).__name__}) from None

    async def _chunk_events(self, chunk: Mapping[str, Any], reply: _Reply) -> AsyncIterator[ActorEvent]:
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if text := delta.get("content"):
                reply.text.append(text)
                yield TextChunk(text)
            for call_delta in delta.get("tool_calls") or ():
                reply.add_call_delta(call_delta)
        if usage := chunk.get("usage"):
            yield self._usage(usage)

    async def _message_events(self, document: Mapping[str, Any], reply: _Reply) -> AsyncIterator[ActorEvent]:
        choices = document.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _bad_response(self.name, "the response has no choices")
        message = choices[0].get("message") or {}
        if text := message.get("content"):
            reply.text.append(text)
            yield TextChunk(text)
        for index, call in enumerate(message.get("tool_calls") or ()):
            reply.add_call_delta({"index": index, **call})
        if usage := document.get("usage"):
            yield self._usage(usage)

    def _usage(self, usage: Mapping[str, Any]) -> Usage:
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        cost = usage.get("cost")
        if not isinstance(cost, (int, float)):
            cost = (tokens_in * self.settings.input_cost_per_mtok + tokens_out * self.settings.output_cost_per_mtok) / 1e6
        return Usage(tokens_in, tokens_out, float(cost))

    def _status_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ActorError:
        detail = _provider_message(body)
        data: dict[str, Any] = {"actor": self.name, "status": status, "base_url": self.settings.base_url,
                                "provider_message": detail}
        if status in (401, 403):
            data["reason"] = "unauthorized"
            message = (f"{self.name}: the model endpoint refused the credentials (HTTP {status}); "
                       f"set {self.settings.api_key_env}")
        elif status == 429:
            data.update(reason="rate_limited", retry_after=headers.get("retry-after"))
            message = f"{self.name}: the model endpoint is rate limiting (HTTP 429); try again later"
        elif status >= 500:
            data["reason"] = "server_error"
            message = f"{self.name}: the model endpoint failed (HTTP {status})"
        else:
            data["reason"] = "rejected"
            message = f"{self.name}: the model endpoint rejected the request (HTTP {status}): {detail}"
        return ActorError(message, data)


async def _sse_chunks(response: Any, actor: str) -> AsyncIterator[dict[str, Any]]:
    """The JSON chunks of an SSE stream, up to ``[DONE]``."""
    try:
        async for line in sse_lines(response.aiter_bytes(), MAX_ANSWER_BYTES):
            if not line.startswith("data:"):
                continue  # blank separators, comments, `event:` lines
            payload = line[5:].strip()
            if payload == "[DONE]":
                return
            if payload:
                chunk = _json(payload.encode(), actor)
                if isinstance(chunk.get("error"), Mapping):  # an error reported mid-stream
                    raise ActorError(f"{actor}: the model endpoint failed: {_provider_message(payload.encode())}",
                                     {"actor": actor, "reason": "server_error", "provider_message": chunk["error"]})
                yield chunk
    except SseTooLargeError as exc:
        raise _bad_response(actor, str(exc)) from None


def _json(data: bytes, actor: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise _bad_response(actor, "the response is not valid JSON", data) from None
    if not isinstance(value, dict):
        raise _bad_response(actor, "the response is not a JSON object", data)
    return value


def _bad_response(actor: str, what: str, data: bytes = b"") -> ActorError:
    preview = data[:MAX_ERROR_CHARS].decode("utf-8", "replace")
    return ActorError(f"{actor}: {what}", {"actor": actor, "reason": "bad_response", "preview": preview})


def _provider_message(body: bytes) -> str:
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return body[:MAX_ERROR_CHARS].decode("utf-8", "replace")
    if isinstance(error, Mapping):
        return str(error.get("message", ""))[:MAX_ERROR_CHARS]
    return str(error)[:MAX_ERROR_CHARS]
