"""The standard A2A task methods, in both dialects, over the TaskService.

The facade calls these with the request's params and its CallContext; the codec of
the call's dialect decodes the params and encodes the results, so the service only
ever sees the one internal model.

Streams: ``stream`` and ``subscribe`` answer with an async iterator of
``StreamItem``s (``a2a/streams.py``), which each transport frames its own way.
``SubscribeToTask`` takes our ``lastEventId`` param (HTTP: the ``Last-Event-ID``
header) to resume after the last event a client saw.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

from cleveragents.a2a import dialects
from cleveragents.a2a.codecs import Codec, SendRequest, get_codec, invalid
from cleveragents.a2a.push import DIALECT_KEY
from cleveragents.a2a.streams import ARTIFACT, STATUS, StreamItem
from cleveragents.app.calls import CallContext
from cleveragents.app.tasks import TaskService
from cleveragents.domain.push_policy import PushTargetRefused
from cleveragents.domain.task import PushConfig, StreamEvent, Task, TaskArtifactUpdate


def codec_for(context: CallContext | None) -> Codec:
    dialect = context.dialect if context is not None else dialects.A2A_V1
    return get_codec("0.3" if dialect == dialects.A2A_V03 else "1.0")


class TaskEndpoint:
    def __init__(self, service: TaskService):
        self.service = service

    # -- messages ------------------------------------------------------------------
    async def send(self, context: CallContext | None = None, **params: Any) -> dict[str, Any]:
        codec = codec_for(context)
        request = _with_dialect(codec.decode_send_params(params), codec)
        with _push_url_at(_send_url_loc(params)):
            result = await self.service.send(
                request.message, blocking=request.blocking, history_length=request.history_length,
                push_config=request.push_config, metadata=request.metadata,
            )
        return codec.encode_send_result(result)

    async def stream(self, context: CallContext | None = None, **params: Any) -> AsyncIterator[StreamItem]:
        codec = codec_for(context)
        request = _with_dialect(codec.decode_send_params(params), codec)
        with _push_url_at(_send_url_loc(params)):
            events = await self.service.stream(request.message, push_config=request.push_config,
                                               metadata=request.metadata)
        return self._items(events, codec, context, ends_task=True)

    async def subscribe(self, context: CallContext | None = None, **params: Any) -> AsyncIterator[StreamItem]:
        codec = codec_for(context)
        events = await self.service.subscribe(_task_id(params), params.get("lastEventId") or None)
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
    async def get(self, context: CallContext | None = None, **params: Any) -> dict[str, Any]:
        codec = codec_for(context)
        task = await self.service.get(_task_id(params), params.get("historyLength"))
        return codec.encode_task(task)

    async def list(self, context: CallContext | None = None, **params: Any) -> dict[str, Any]:
        codec = codec_for(context)
        states = None
        if (status := params.get("status")) is not None:
            wanted = status if isinstance(status, list) else [status]
            states = {codec.state_from_wire(str(s), ("status",)) for s in wanted}
        history_length = params.get("historyLength")
        page = await self.service.list(
            context_id=params.get("contextId"), states=states, page_size=params.get("pageSize") or 50,
            page_token=params.get("pageToken"), status_after=params.get("statusTimestampAfter"),
            history_length=history_length, include_artifacts=bool(params.get("includeArtifacts", False)),
        )
        return codec.encode_list_result(page.tasks, page.next_page_token, page.page_size, page.total_size)

    async def cancel(self, context: CallContext | None = None, **params: Any) -> dict[str, Any]:
        return codec_for(context).encode_task(await self.service.cancel(_task_id(params)))

    # -- push notification configs -------------------------------------------------
    async def create_push_config(self, context: CallContext | None = None, **params: Any) -> dict[str, Any]:
        codec = codec_for(context)
        with _push_url_at(_config_url_loc(params)):
            config = await self.service.set_push_config(_dialect_config(codec.decode_push_config(params), codec))
        return codec.encode_push_config(config)

    async def get_push_config(self, context: CallContext | None = None, **params: Any) -> dict[str, Any]:
        task_id, config_id = _config_ref(params, context)
        return codec_for(context).encode_push_config(await self.service.get_push_config(task_id, config_id))

    async def list_push_configs(self, context: CallContext | None = None, **params: Any) -> Any:
        codec = codec_for(context)
        task_id, _ = _config_ref(params, context, need_config=False)
        configs = [codec.encode_push_config(c) for c in await self.service.list_push_configs(task_id)]
        if context is not None and context.dialect == dialects.A2A_V03:
            return configs
        return {"configs": configs, "nextPageToken": ""}

    async def delete_push_config(self, context: CallContext | None = None, **params: Any) -> Any:
        task_id, config_id = _config_ref(params, context)
        if config_id is None:
            raise invalid(("id",), "the config's id is required")
        await self.service.delete_push_config(task_id, config_id)
        return None if context is not None and context.dialect == dialects.A2A_V03 else {}


@contextlib.contextmanager
def _push_url_at(loc: tuple[str, ...]) -> Iterator[None]:
    """A refused webhook URL, reported at its place in the request's params."""
    try:
        yield
    except PushTargetRefused as exc:
        raise exc.at(loc) from None


def _config_url_loc(params: Any, loc: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Where a push config's url is: flat (1.0) or under ``pushNotificationConfig`` (0.3)."""
    if isinstance(params, dict) and isinstance(params.get("pushNotificationConfig"), dict):
        loc = (*loc, "pushNotificationConfig")
    return (*loc, "url")


def _send_url_loc(params: dict[str, Any]) -> tuple[str, ...]:
    conf = params.get("configuration")
    conf = conf if isinstance(conf, dict) else {}
    key = "taskPushNotificationConfig" if "taskPushNotificationConfig" in conf else "pushNotificationConfig"
    return _config_url_loc(conf.get(key), ("configuration", key))


def _dialect_config(config: PushConfig, codec: Codec) -> PushConfig:
    """Webhooks get items in the dialect their config was made in."""
    return replace(config, metadata={**config.metadata, DIALECT_KEY: codec.version})


def _with_dialect(request: SendRequest, codec: Codec) -> SendRequest:
    if request.push_config is None:
        return request
    return replace(request, push_config=_dialect_config(request.push_config, codec))


def _task_id(params: dict[str, Any]) -> str:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise invalid(("id",), "the task's id is required")
    return task_id


def _config_ref(params: dict[str, Any], context: CallContext | None,
                need_config: bool = True) -> tuple[str, str | None]:
    """(task id, config id): 1.0 names them `taskId` and `id`; 0.3 `id` and
    `pushNotificationConfigId`."""
    if context is not None and context.dialect == dialects.A2A_V03:
        task_id, config_id = params.get("id"), params.get("pushNotificationConfigId")
        task_loc = "id"
    else:
        task_id, config_id = params.get("taskId"), params.get("id")
        task_loc = "taskId"
    if not isinstance(task_id, str) or not task_id:
        raise invalid((task_loc,), "the task's id is required")
    if config_id is not None and not isinstance(config_id, str):
        raise invalid(("id",), "must be a string")
    return task_id, config_id
