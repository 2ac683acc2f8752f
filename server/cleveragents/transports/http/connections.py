"""Connection limits that uvicorn lacks, in its HTTP protocol (h11 or httptools).

uvicorn closes a keep-alive connection that stays idle after a response
(``timeout_keep_alive``), but a connection that never completes a request head is
kept forever: a client that sends nothing, or one header byte now and then
(slowloris), holds a connection and its memory until it leaves. Nor does it bound
the number of connections. An ASGI middleware can't help: the app first hears of a
request once its head is complete. So the protocol class is extended:

- **Head timeout.** From the moment a connection waits for a request (it opened, or
  its last response ended), the whole request head must arrive within
  ``header_timeout``; otherwise it gets 408 (if it sent anything) and is closed.
- **Body timeout.** A request body must arrive within ``body_timeout`` of its head;
  otherwise the connection is closed and the route sees a disconnect.
- **Connection limit.** Past ``max_connections``, a new connection takes the place of
  the one that has waited longest for a request head (idle or slowloris) or for the
  body of a request that will be refused (``mark_refused``: the caller has no valid
  credential, and needs none to send it slowly), never one with a request being
  served; if there is none, the new one gets 503. A normal client is so served even
  while slow clients fill the limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("cleveragents.http")

_TIMEOUT_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"content-length: 32\r\nconnection: close\r\n\r\nThe request head came too slowly")
_BUSY_503 = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
             b"retry-after: 1\r\ncontent-length: 29\r\nconnection: close\r\n\r\nToo many connections; retry.")


_REFUSED_SINCE = "cleveragents.refused_since"  # in a request's ASGI scope, which the protocol's cycle shares


def mark_refused(scope: MutableMapping[str, Any], reading: bool) -> None:
    """Say that the request of ``scope`` will be refused while (``reading``) its body is
    read: its connection may then be closed to make room."""
    if reading:
        scope[_REFUSED_SINCE] = asyncio.get_running_loop().time()
    else:
        scope.pop(_REFUSED_SINCE, None)


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Seconds and counts; every one is finite."""

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 512

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout", "keep_alive_timeout"):
            if not 0 < getattr(self, name) < 86400:
                raise ValueError(f"{name} must be between 0 and 86400 seconds, not {getattr(self, name)!r}")
        if not 1 <= self.max_connections <= 1_000_000:
            raise ValueError(f"max_connections must be between 1 and 1000000, not {self.max_connections!r}")

    def uvicorn_options(self, http: str = "auto") -> dict[str, Any]:
        """Keywords for ``uvicorn.Config``: the limited protocol class, and the keep-alive timeout."""
        return {"http": limited_protocol(self, http), "timeout_keep_alive": self.keep_alive_timeout}


class _Limited:
    """Mixed into uvicorn's protocol class. Uses only what both of uvicorn's HTTP
    protocols have: ``cycle`` (the request being served; replaced when a new head is
    parsed), ``transport``, ``connections`` (the server's set), ``loop`` and the
    ``connection_made`` / ``data_received`` / ``on_response_complete`` /
    ``connection_lost`` hooks."""

    limits: HttpLimits
    cycle: Any
    transport: Any
    connections: set[Any]
    loop: asyncio.AbstractEventLoop

    def connection_made(self, transport: Any) -> None:
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._seen_cycle: Any = None
        self._waiting_since = 0.0
        self._sent_anything = False
        super().connection_made(transport)  # type: ignore[misc]
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            transport.write(_BUSY_503)
            transport.close()
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        self._sent_anything = True
        super().data_received(data)  # type: ignore[misc]
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._follow()
        if self._head_timer is None and (self.cycle is None or self.cycle.response_complete):
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timers()
        super().connection_lost(exc)  # type: ignore[misc]

    # -- state ---------------------------------------------------------------------
    def _follow(self) -> None:
        """Notice a new request head (the head timer stops, the body timer starts) and a
        complete body (the body timer stops)."""
        cycle = self.cycle
        if cycle is not None and cycle is not self._seen_cycle:
            self._seen_cycle = cycle
            self._sent_anything = False
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            if cycle.more_body and not self.transport.is_closing():
                self._body_timer = self.loop.call_later(self.limits.body_timeout, self._body_expired, cycle)
        if self._body_timer is not None and (cycle is None or not cycle.more_body):
            self._body_timer.cancel()
            self._body_timer = None

    def _await_head(self) -> None:
        if self.transport.is_closing():
            return
        self._sent_anything = False
        self._waiting_since = self.loop.time()
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_expired)

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._sent_anything:
            logger.info("closing a connection whose request head took over %ss", self.limits.header_timeout)
            self.transport.write(_TIMEOUT_408)
        self.transport.close()

    def _body_expired(self, cycle: Any) -> None:
        self._body_timer = None
        if cycle is self.cycle and cycle.more_body and not self.transport.is_closing():
            logger.info("closing a connection whose request body took over %ss", self.limits.body_timeout)
            self.transport.close()

    def _stop_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None

    def _idle_since(self) -> float | None:
        """Since when this connection has waited for a head or for a refused request's
        body; None while it is being served (or is closing)."""
        if self.transport.is_closing():
            return None
        if self._head_timer is not None:
            return self._waiting_since
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            since: float | None = cycle.scope.get(_REFUSED_SINCE)
            return since
        return None

    def _make_room(self) -> bool:
        """Close the connection that has waited longest, if any (``_idle_since``)."""
        waiting = [(since, c) for c in self.connections
                   if c is not self and hasattr(c, "_head_timer") and (since := c._idle_since()) is not None]
        if not waiting:
            return False
        _, oldest = min(waiting, key=lambda pair: pair[0])
        oldest._stop_timers()
        oldest.transport.close()
        return True


def limited_protocol(limits: HttpLimits, http: str = "auto") -> type:
    """uvicorn's HTTP protocol class (``http``: auto, h11 or httptools) with ``limits``."""
    base: type
    if http == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    elif http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    else:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base
    return type(f"Limited{base.__name__}", (_Limited, base), {"limits": limits})
