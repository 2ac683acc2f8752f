"""Push notifications: each stream item of a task goes to its configured webhooks.

Items are encoded in the dialect the config was created in and posted in order, one
worker per webhook URL, with a bounded queue: a slow or dead webhook loses its own
oldest items (logged), never the task's progress. ``admit`` checks a config's URL
before it is stored (where it may point, ``infra/push_targets.py``); the poster checks
it again at each delivery.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cleveragents.a2a.codecs import get_codec
from cleveragents.domain.task import PushConfig, StreamItem

logger = logging.getLogger(__name__)

QUEUE_LIMIT = 256
RETRIES = 3
IDLE_SECONDS = 60.0  # a webhook's worker stops after this long with nothing to send
TOKEN_HEADER = "X-A2A-Notification-Token"
DIALECT_KEY = "dialect"  # in PushConfig.metadata: "1.0" or "0.3"

Poster = Callable[[str, Any, Mapping[str, str]], Awaitable["str | None"]]
Admit = Callable[[str], Awaitable[None]]


async def _admit_any(url: str) -> None:
    return None


class PushSender:
    def __init__(self, post: Poster, retry_delay: float = 0.5, idle: float = IDLE_SECONDS,
                 admit: Admit = _admit_any):
        self._post = post
        self._admit = admit
        self._retry_delay = retry_delay
        self._idle = idle
        self._queues: dict[str, asyncio.Queue[tuple[PushConfig, Any]]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}

    async def admit(self, config: PushConfig) -> None:
        """Refuse (``ValidationError``) a config whose URL the server won't call."""
        await self._admit(config.url)

    def deliver(self, config: PushConfig, item: StreamItem) -> None:
        codec = get_codec(str(config.metadata.get(DIALECT_KEY, "1.0")))
        body = codec.encode_stream_item(item)
        queue = self._queues.get(config.url)
        if queue is None:
            queue = self._queues[config.url] = asyncio.Queue(QUEUE_LIMIT)
            self._workers[config.url] = asyncio.ensure_future(self._work(config.url, queue))
        if queue.full():
            queue.get_nowait()
            logger.warning("push queue for a webhook of task %s is full; dropped its oldest item", config.task_id)
        queue.put_nowait((config, body))

    async def _work(self, url: str, queue: asyncio.Queue[tuple[PushConfig, Any]]) -> None:
        while True:
            try:
                config, body = await asyncio.wait_for(queue.get(), self._idle)
            except asyncio.TimeoutError:
                if queue.empty():  # nothing arrived meanwhile: this webhook's worker goes
                    self._queues.pop(url, None)
                    self._workers.pop(url, None)
                    return
                continue
            headers = _headers(config)
            for attempt in range(RETRIES):
                problem = await self._post(config.url, body, headers)
                if problem is None:
                    break
                logger.warning("push to a webhook of task %s failed (%s), attempt %d",
                               config.task_id, problem, attempt + 1)
                await asyncio.sleep(self._retry_delay * (2 ** attempt))

    async def aclose(self) -> None:
        for worker in self._workers.values():
            worker.cancel()
        await asyncio.gather(*self._workers.values(), return_exceptions=True)
        self._workers.clear()
        self._queues.clear()


def _headers(config: PushConfig) -> dict[str, str]:
    headers: dict[str, str] = {}
    if config.token:
        headers[TOKEN_HEADER] = config.token
    auth = config.authentication or {}  # the codecs store {"scheme", "credentials"}
    if auth.get("credentials") and str(auth.get("scheme", "")).lower() == "bearer":
        headers["Authorization"] = f"Bearer {auth['credentials']}"
    return headers
