"""Posting JSON to webhooks (push notifications), with the standard library.

``post_json`` blocks. ``WebhookPoster`` runs it in a pool of threads of its own, so
webhooks that are slow to answer hold up each other's deliveries, never the server's
other work in the shared pool, and it ends each post at its time limit, however the
webhook dribbles its answer: a socket's timeout bounds each read, not the whole.
Errors come back as a short description, never as an exception: a failing webhook
must not disturb its task.

The webhook's host is resolved and checked (``push_targets.PushTargets``) at each
call, and the connection goes to an address that was checked, with the URL's host
in ``Host`` and in TLS (name and certificate): no second lookup happens that a DNS
answer could change. Redirects are not followed, and proxy variables are not used,
since either would send the request somewhere unchecked.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import ssl
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from cleveragents.domain.push_policy import PushTargetRefused
from cleveragents.infra.push_targets import PushTargets, Target

USER_AGENT = "cleveragents-push/1"
READ_LIMIT = 65536


POST_THREADS = 8
LOOKUP_THREADS = 4


class WebhookPoster:
    """``await poster(url, body, headers) -> None | problem``, for ``PushSender``: a post
    takes at most ``timeout`` seconds in all. ``admit`` checks a URL before its config is
    stored. Posts and the lookups of hosts a caller named each have threads of their
    own: a slow webhook holds up neither a config's check nor the server's other work."""

    def __init__(self, targets: PushTargets, timeout: float = 10.0):
        self.targets = targets
        self.timeout = timeout
        self._posts: ThreadPoolExecutor | None = None
        self._lookups: ThreadPoolExecutor | None = None

    async def admit(self, url: str) -> None:
        """``targets.check`` (``PushTargetRefused``), off the event loop."""
        if self._lookups is None:
            self._lookups = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="cleveragents-push-lookup")
        await asyncio.get_running_loop().run_in_executor(self._lookups, self.targets.check, url)

    async def __call__(self, url: str, body: Any, headers: Mapping[str, str]) -> str | None:
        if self._posts is None:
            self._posts = ThreadPoolExecutor(POST_THREADS, thread_name_prefix="cleveragents-push")
        stop = Stop()
        posted = asyncio.get_running_loop().run_in_executor(
            self._posts, lambda: post_json(url, body, headers, timeout=self.timeout, targets=self.targets, stop=stop))
        try:
            return await asyncio.wait_for(asyncio.shield(posted), self.timeout)
        except TimeoutError:
            return f"no whole answer within {self.timeout:g}s"
        finally:
            stop()  # a post still under way ends now, and its thread is free

    def close(self) -> None:
        for pool in (self._posts, self._lookups):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)


class Stop:
    """Ends a post from another thread: shutting its socket down wakes a blocked read or
    write there, which then fails."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._sock: socket.socket | None = None

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self._stopped:
                _shut(sock)

    def __call__(self) -> None:
        with self._lock:
            self._stopped = True
            if self._sock is not None:
                _shut(self._sock)


def _shut(sock: socket.socket) -> None:
    try:
        # The plain socket's shutdown, also for TLS: it leaves the TLS state alone,
        # which the posting thread may be using.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


def post_json(url: str, body: Any, headers: Mapping[str, str], timeout: float = 10.0,
              targets: PushTargets | None = None, stop: Stop | None = None) -> str | None:
    """POST ``body``; ``None`` on a 2xx answer, else what went wrong. ``timeout`` bounds
    each step; ``stop`` ends the post from another thread."""
    try:
        target = (targets or PushTargets()).check(url)
    except PushTargetRefused as exc:
        return f"refused: {exc.detail}"
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    payload = json.dumps(body).encode("utf-8")
    request_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers}
    problem = "no address"
    for address in target.addresses:
        connection = _connection(target, address, timeout, stop)
        try:
            connection.request("POST", path, body=payload, headers=request_headers)
            response = connection.getresponse()
            response.read(READ_LIMIT)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
            continue  # the next checked address, if any
        finally:
            connection.close()
        if 200 <= response.status < 300:
            return None
        if 300 <= response.status < 400:
            return f"HTTP {response.status} (redirects are not followed)"
        return f"HTTP {response.status}"
    return problem


def _connection(target: Target, address: str, timeout: float, stop: Stop | None) -> http.client.HTTPConnection:
    name = f"[{target.host}]" if ":" in target.host else target.host
    host_header = name if target.port == (443 if target.scheme == "https" else 80) else f"{name}:{target.port}"
    if target.scheme == "https":
        connection: http.client.HTTPConnection = _PinnedHTTPS(target.host, target.port, timeout=timeout,
                                                              context=ssl.create_default_context())
    else:
        connection = _PinnedHTTP(target.host, target.port, timeout=timeout)
    connection.address = address  # type: ignore[attr-defined]
    connection.host_header = host_header  # type: ignore[attr-defined]
    connection.stop = stop  # type: ignore[attr-defined]
    return connection


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to ``address`` (checked) instead of resolving ``host`` again."""

    address: str
    host_header: str
    stop: Stop | None

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.stop is not None:
            self.stop.watch(self.sock)

    def putrequest(self, method: str, url: str, skip_host: bool = False, skip_accept_encoding: bool = False) -> None:
        super().putrequest(method, url, skip_host=True, skip_accept_encoding=skip_accept_encoding)
        self.putheader("Host", self.host_header)


class _PinnedHTTPS(_PinnedHTTP, http.client.HTTPSConnection):
    def connect(self) -> None:
        _PinnedHTTP.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)  # type: ignore[attr-defined]
        if self.stop is not None:  # wrapping took the socket over: watch what it became
            self.stop.watch(self.sock)
