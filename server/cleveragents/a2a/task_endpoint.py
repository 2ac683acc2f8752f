"""The standard A2A task methods, in both dialects, over the TaskService.

The facade calls these with the request's params model, as it validated it, and the
CallContext. A handler reads the fields every dialect shares from the model; the codec
of the call's dialect decodes the rest (messages, configurations, push configs) and
encodes the results, so the service only ever sees the one internal model.

Streams: ``stream`` and ``subscribe`` answer with an async iterator of
``StreamItem``s (``a2a/streams.py``), which each transport frames its own way.
``SubscribeToTask`` takes our ``lastEventId`` param (HTTP: the ``Last-Event-ID``
header) to resume after the last event a client saw.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from cleveragents.a2a import dialects
from cleveragents.a2a.codecs import Codec, Json, SendRequest, get_codec
from cleveragents.a2a.params import (
    GetTaskParams,
    ListTasksParams,
    PushConfigParams,
    SendMessageParams,
    SubscribeToTaskParams,
    TaskIdParams,
)
from cleveragents.a2a.push import DIALECT_KEY
from cleveragents.a2a.streams import ARTIFACT, STATUS, StreamItem
from cleveragents.app.calls import CallContext
from cleveragents.app.tasks import TaskService
from cleveragents.domain.caller import CallerIdentity
from cleveragents.domain.push_policy import PushTargetRefused
from cleveragents.domain.task import PushConfig, StreamEvent, Task, TaskArtifactUpdate


def codec_for(context: CallContext | None) -> Codec:
    dialect = context.dialect if context is not None else dialects.A2A_V1
    return get_codec("0.3" if dialect == dialects.A2A_V03 else "1.0")


def caller_of(context: CallContext | None) -> CallerIdentity | None:
    return context.caller if context is not None else None


class TaskEndpoint:
    def __init__(self, service: TaskService):
        self.service = service

    # -- messages ------------------------------------------------------------------
    async def send(self, q: SendMessageParams, context: CallContext | None = None) -> dict[str, Any]:
        codec = codec_for(context)
        request = _with_dialect(codec.decode_send(q.message, q.configuration, q.metadata), codec)
        try:
            result = await self.service.send(
                request.message, blocking=request.blocking, history_length=request.history_length,
                push_config=request.push_config, metadata=request.metadata, caller=caller_of(context),
            )
        except PushTargetRefused as exc:
            raise exc.at(_send_url_loc(q.configuration)) from None
        return codec.encode_send_result(result)

    async def stream(self, q: SendMessageParams, context: CallContext | None = None) -> AsyncIterator[StreamItem]:
        codec = codec_for(context)
        request = _with_dialect(codec.decode_send(q.message, q.configuration, q.metadata), codec)
        try:
            events = await self.service.stream(request.message, push_config=request.push_config,
                                               metadata=request.metadata, caller=caller_of(context),
                                               caller_tools=context.tools if context is not None else None,
                                               reader=context.reader if context is not None else None)
        except PushTargetRefused as exc:
            raise exc.at(_send_url_loc(q.configuration)) from None
        return self._items(events, codec, context, ends_task=True)

    async def subscribe(self, q: SubscribeToTaskParams,
                        context: CallContext | None = None) -> AsyncIterator[StreamItem]:
        codec = codec_for(context)
        events = await self.service.subscribe(q.id, q.lastEventId or None)
        return self._items(events, codec, context, ends_task=False)

    async def _items(self, events: AsyncIterator[StreamEvent], codec: Codec, context: CallContext | None,
                     ends_task: bool) -> AsyncIterator[StreamItem]:
        """The task's events as stream items. A call cancelled while it streams cancels
        the task it started when ``context.cancel_ends_task`` says so (stdio's
        ``$/cancelRequest``, an HTTP client that stopped reading)."""
        started: str | None = None
        try:
            async with contextlib.aclosing(events):  # type: ignore[type-var]
                async for event_id, item in events:
                    if started is None and isinstance(item, Task):
                        started = item.id
                    kind = ARTIFACT if isinstance(item, TaskArtifactUpdate) else STATUS
                    yield StreamItem(kind, codec.encode_stream_item(item), event_id)
        except asyncio.CancelledError:
            if ends_task and started is not None and context is not None and context.cancel_ends_task:
                with contextlib.suppress(Exception):  # already ended: nothing to cancel
                    await asyncio.shield(self.service.cancel(started))
            raise

    # -- tasks ---------------------------------------------------------------------
    async def get(self, q: GetTaskParams, context: CallContext | None = None) -> dict[str, Any]:
        return codec_for(context).encode_task(await self.service.get(q.id, q.historyLength))

    async def list(self, q: ListTasksParams, context: CallContext | None = None) -> dict[str, Any]:
        codec = codec_for(context)
        states = None
        if q.status is not None:
            wanted = q.status if isinstance(q.status, list) else [q.status]
            states = {codec.state_from_wire(s, ("status",)) for s in wanted}
        page = await self.service.list(
            context_id=q.contextId, states=states, page_size=q.pageSize or 50, page_token=q.pageToken,
            status_after=q.statusTimestampAfter, history_length=q.historyLength,
            include_artifacts=q.includeArtifacts,
        )
        return codec.encode_list_result(page.tasks, page.next_page_token, page.page_size, page.total_size)

    async def cancel(self, q: TaskIdParams, context: CallContext | None = None) -> dict[str, Any]:
        return codec_for(context).encode_task(await self.service.cancel(q.id))

    # -- push notification configs -------------------------------------------------
    # Their params differ by dialect (1.0 is flat, 0.3 nests the config), so the model
    # checks none of them and the codec reads them from the model's extra fields.
    async def create_push_config(self, q: PushConfigParams, context: CallContext | None = None) -> dict[str, Any]:
        codec, params = codec_for(context), _fields(q)
        try:
            config = await self.service.set_push_config(_dialect_config(codec.decode_push_config(params), codec))
        except PushTargetRefused as exc:
            raise exc.at(_config_url_loc(params)) from None
        return codec.encode_push_config(config)

    async def get_push_config(self, q: PushConfigParams, context: CallContext | None = None) -> dict[str, Any]:
        codec = codec_for(context)
        task_id, config_id = codec.decode_push_config_ref(_fields(q))
        return codec.encode_push_config(await self.service.get_push_config(task_id, config_id))

    async def list_push_configs(self, q: PushConfigParams, context: CallContext | None = None) -> Any:
        codec = codec_for(context)
        task_id, _ = codec.decode_push_config_ref(_fields(q))
        configs = [codec.encode_push_config(c) for c in await self.service.list_push_configs(task_id)]
        if context is not None and context.dialect == dialects.A2A_V03:
            return configs
        return {"configs": configs, "nextPageToken": ""}

    async def delete_push_config(self, q: PushConfigParams, context: CallContext | None = None) -> Any:
        task_id, config_id = codec_for(context).decode_push_config_ref(_fields(q), config_required=True)
        assert config_id is not None  # required above
        await self.service.delete_push_config(task_id, config_id)
        return None if context is not None and context.dialect == dialects.A2A_V03 else {}


def _fields(q: PushConfigParams) -> Json:
    return q.model_extra or {}


# A refused webhook URL is reported at its place in the request's params, worked out
# only when one is refused (every send would pay for it otherwise).
def _config_url_loc(params: Any, loc: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Where a push config's url is: flat (1.0) or under ``pushNotificationConfig`` (0.3)."""
    if isinstance(params, dict) and isinstance(params.get("pushNotificationConfig"), dict):
        loc = (*loc, "pushNotificationConfig")
    return (*loc, "url")


def _send_url_loc(configuration: Json | None) -> tuple[str, ...]:
    conf = configuration or {}
    key = "taskPushNotificationConfig" if "taskPushNotificationConfig" in conf else "pushNotificationConfig"
    return _config_url_loc(conf.get(key), ("configuration", key))


def _dialect_config(config: PushConfig, codec: Codec) -> PushConfig:
    """Webhooks get items in the dialect their config was made in."""
    return replace(config, metadata={**config.metadata, DIALECT_KEY: codec.version})


def _with_dialect(request: SendRequest, codec: Codec) -> SendRequest:
    if request.push_config is None:
        return request
    return replace(request, push_config=_dialect_config(request.push_config, codec))
