"""Run by the a2a-sdk 0.3 venv's Python (``sdk03.py``), never imported by the tests:
``python sdk03_driver.py SCENARIO OPTIONS_JSON``. It drives a server with the real 0.3
client and prints one JSON report of what it saw. Each step's outcome is recorded
(its result, or the error raised), so one step's failure shows beside the others.

OPTIONS: ``url`` (the server's base URL), ``token``, ``transport`` ("JSONRPC",
"HTTP+JSON" or "GRPC"), ``card_path`` (the card to start from). Over gRPC the token
goes as ``authorization`` metadata, added by a channel interceptor: the SDK's gRPC
transport sends none of its own.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    GetTaskPushNotificationConfigParams,
    Message,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TextPart,
)

STEP_SECONDS = 20


def message(text: str) -> Message:
    return Message(role=Role.user, message_id=f"m-{text}", parts=[Part(root=TextPart(text=text))])


def text_of(task: Task) -> str:
    return "".join(getattr(p.root, "text", "") for a in task.artifacts or [] for p in a.parts)


def error_of(exc: BaseException) -> dict[str, Any]:
    error = getattr(exc, "error", None)
    report = {"error": type(exc).__name__, "code": getattr(error, "code", None),
              "status": getattr(exc, "status_code", None), "message": str(exc)[:500]}
    if callable(getattr(exc, "details", None)):  # a gRPC status, which the 0.3 gRPC transport lets through
        report.update(grpc_code=exc.code().name, details=exc.details())
    return report


async def step(report: dict[str, Any], name: str, work: Any) -> Any:
    try:
        value = await asyncio.wait_for(work, STEP_SECONDS)
    except Exception as exc:  # noqa: BLE001 - the report says what was raised
        report[name] = error_of(exc)
        return None
    report[name] = value
    return value


def kind_of(event: Any) -> str:
    if isinstance(event, Message):
        return "message"
    task, update = event
    return type(update).__name__ if update is not None else "Task"


def grpc_channel_factory(token: str | None) -> Any:
    """A factory of insecure channels that send ``token`` as a bearer token."""
    import grpc

    def with_token(details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), ("authorization", f"Bearer {token}")])

    # grpc.aio files an interceptor under one kind only: one of each.
    class Unary(grpc.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            return await continuation(with_token(details), request)

    class Streaming(grpc.aio.UnaryStreamClientInterceptor):
        async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
            return await continuation(with_token(details), request)

    interceptors = [Unary(), Streaming()] if token else []
    return lambda url: grpc.aio.insecure_channel(url, interceptors=interceptors)


async def card_view(http: httpx.AsyncClient, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    card = await A2ACardResolver(http, options["url"], options.get("card_path", "/.well-known/agent-card.json")
                                 ).get_agent_card()
    return card, {"url": card.url, "protocolVersion": card.protocol_version,
                  "preferredTransport": card.preferred_transport,
                  "additionalInterfaces": [{"url": i.url, "transport": i.transport}
                                           for i in card.additional_interfaces or []],
                  "streaming": card.capabilities.streaming,
                  "extendedCard": card.supports_authenticated_extended_card,
                  "securitySchemes": sorted(card.security_schemes or {})}


async def conversation(http: httpx.AsyncClient, options: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    card, report["card"] = await card_view(http, options)
    transports = [options["transport"]]
    channels = {"grpc_channel_factory": grpc_channel_factory(options.get("token"))} if transports == ["GRPC"] else {}
    client = ClientFactory(ClientConfig(streaming=False, httpx_client=http, supported_transports=transports,
                                        **channels)).create(card)
    streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http, supported_transports=transports,
                                           **channels)).create(card)
    report["transport"] = type(client._transport).__name__

    async def send() -> dict[str, Any]:
        (event,) = [e async for e in client.send_message(message("hello"))]
        task = event[0]
        return {"id": task.id, "state": task.status.state.value, "text": text_of(task)}

    sent = await step(report, "send", send())
    task_id = sent["id"] if isinstance(sent, dict) and "id" in sent else "none"

    async def get() -> dict[str, Any]:
        task = await client.get_task(TaskQueryParams(id=task_id, history_length=1))
        return {"id": task.id, "state": task.status.state.value, "history": len(task.history or []),
                "text": text_of(task)}

    await step(report, "get", get())
    await step(report, "get_missing", client.get_task(TaskQueryParams(id="no-such-task")))
    await step(report, "cancel_completed", client.cancel_task(TaskIdParams(id=task_id)))

    async def push() -> dict[str, Any]:
        config = TaskPushNotificationConfig(task_id=task_id, push_notification_config=PushNotificationConfig(
            id="hook-1", url="http://127.0.0.1:9/hook", token="secret"))
        created = await client.set_task_callback(config)
        got = await client.get_task_callback(GetTaskPushNotificationConfigParams(
            id=task_id, push_notification_config_id=created.push_notification_config.id))
        return {"created": created.model_dump(mode="json", exclude_none=True),
                "got": got.model_dump(mode="json", exclude_none=True)}

    await step(report, "push", push())

    async def stream() -> dict[str, Any]:
        events = [e async for e in streaming.send_message(message("streamed"))]
        last = events[-1][0]
        return {"kinds": [kind_of(e) for e in events], "state": last.status.state.value, "text": text_of(last)}

    await step(report, "stream", stream())

    async def resubscribe_and_cancel() -> dict[str, Any]:
        first_stream = streaming.send_message(message("wait here"))
        first = await anext(first_stream)
        waiting_id = first[0].id
        resubscribed = streaming.resubscribe(TaskIdParams(id=waiting_id))
        snapshot = await anext(resubscribed)
        canceled = await client.cancel_task(TaskIdParams(id=waiting_id))
        rest = [e async for e in resubscribed]
        await first_stream.aclose()
        return {"snapshot": snapshot[0].id == waiting_id, "canceled": canceled.status.state.value,
                "last": rest[-1][0].status.state.value if rest else None}

    await step(report, "resubscribe", resubscribe_and_cancel())

    async def resubscribe_missing() -> list[str]:
        return [kind_of(e) async for e in streaming.resubscribe(TaskIdParams(id="no-such-task"))]

    await step(report, "resubscribe_missing", resubscribe_missing())

    async def extended_card() -> dict[str, Any]:
        extended = await client.get_card()
        return {"name": extended.name, "url": extended.url}

    await step(report, "extended_card", extended_card())
    return report


async def parts(http: httpx.AsyncClient, options: dict[str, Any]) -> dict[str, Any]:
    """Send each of ``texts`` (and stream the first): each answer's one artifact, with
    its parts as the client read them."""
    report: dict[str, Any] = {}
    card, _ = await card_view(http, options)
    texts = options["texts"]
    for name, text, streaming in [(t, t, False) for t in texts] + [("stream", texts[0], True)]:
        config = ClientConfig(streaming=streaming, httpx_client=http, supported_transports=[options["transport"]])
        client = ClientFactory(config).create(card)

        async def send(client: Any = client, text: str = text) -> dict[str, Any]:
            events = [e async for e in client.send_message(message(text))]
            task = events[-1][0]
            (artifact,) = task.artifacts or []
            head = artifact.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"parts"})
            return {"state": task.status.state.value, "artifact": head,
                    "parts": [p.root.model_dump(mode="json", by_alias=True, exclude_none=True)
                              for p in artifact.parts]}

        await step(report, name, send())
    return report


async def main(scenario: str, options: dict[str, Any]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {options['token']}"} if options.get("token") else {}
    async with httpx.AsyncClient(timeout=STEP_SECONDS, headers=headers) as http:
        if scenario == "card":
            return (await card_view(http, options))[1]
        if scenario == "conversation":
            return await conversation(http, options)
        if scenario == "parts":
            return await parts(http, options)
    raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
    print(json.dumps({**result, "sdk_version": version("a2a-sdk")}, default=str))
