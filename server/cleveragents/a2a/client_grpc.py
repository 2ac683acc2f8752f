"""The outbound client's gRPC wire: A2A 1.0 calls to a peer's ``GRPC`` interface.

``A2AClient`` keeps speaking in JSON-RPC terms (a 1.0 method name, its params, its
result); this wire sends each call as the RPC of the same name (``grpc_wire.py``
converts both ways) and reads a gRPC status back as the JSON-RPC error the client
already knows how to raise. Service parameters and credentials go as metadata. A
target given as ``grpcs://`` or ``https://`` is dialled over TLS, ``grpc://`` or
``http://`` in the clear; a bare ``HOST:PORT`` follows the scheme of the card's URL.
grpc is imported when the first wire is made (the ``grpc`` extra).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cleveragents.a2a import grpc_cost, grpc_wire
from cleveragents.a2a.client_errors import (
    A2AClientConnectionError,
    A2AClientError,
    A2AClientTimeoutError,
    remote_error,
    with_auth_kind,
)
from cleveragents.a2a.client_wire import MAX_RESPONSE_BYTES
from cleveragents.a2a.errors import InvalidAgentResponseError

_AUTH_STATUS = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}
_SECURE_SCHEMES = ("grpcs", "https")
_PLAIN_SCHEMES = ("grpc", "http")
_NETLOC = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:[0-9]+)?", re.IGNORECASE)  # HOST, [IPv6], :PORT


@dataclass(frozen=True, slots=True)
class DialTarget:
    """Where a card's gRPC interface is dialled: its host, its port (None: gRPC's
    default, 443) and whether over TLS."""

    host: str
    port: int | None
    secure: bool

    @property
    def target(self) -> str:
        """``HOST:PORT``, as gRPC dials it and as the peer is told."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"


def dial_target(url: str, card_url: str) -> DialTarget:
    """Where to dial a card's gRPC interface URL, and whether over TLS.

    The target is made from the host and port alone: gRPC reads a bare target with
    naming schemes of its own (``unix:``, ``ipv4:``, ``vsock:``...), which would send
    the calls, and their token, somewhere other than a host the card names."""
    bare = "://" not in url
    try:
        parts = urlsplit(f"//{url.rstrip('/')}" if bare else url)
        port = parts.port
    except ValueError:  # a port that is no number or out of range, an unclosed [
        parts, port = None, None
    if (parts is None or not (bare or parts.scheme in _SECURE_SCHEMES + _PLAIN_SCHEMES) or not parts.hostname
            or not _NETLOC.fullmatch(parts.netloc) or (bare and (parts.path or parts.query or parts.fragment))):
        raise A2AClientError(f"the gRPC interface {url!r} is not a HOST:PORT or a grpc(s):// URL",
                             {"url": url}, url=url)
    secure = urlsplit(card_url).scheme == "https" if bare else parts.scheme in _SECURE_SCHEMES
    if port is None and not bare:
        port = 443 if secure else 80
    return DialTarget(parts.hostname, port, secure)


class GrpcWire:
    """One channel to a peer's ``A2AService`` at ``url`` (dialled at ``where``); with
    ``address``, to that address (a checked one of its host), naming the host to the
    peer and in TLS."""

    def __init__(self, url: str, where: DialTarget, metadata: Mapping[str, str], timeout: float | None,
                 address: str | None = None):
        grpc = importlib.import_module("grpc")
        self.url = url
        self.target = where.target
        self.metadata = tuple((key.lower(), value) for key, value in metadata.items())
        self.timeout = timeout
        options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", MAX_RESPONSE_BYTES)]
        dial = self.target
        if address is not None:
            port = where.port or 443
            dial = f"ipv6:[{address}]:{port}" if ":" in address else f"ipv4:{address}:{port}"
            options.append(("grpc.default_authority", self.target))
            if where.secure:
                options.append(("grpc.ssl_target_name_override", where.host))
        self._channel = (grpc.aio.secure_channel(dial, grpc.ssl_channel_credentials(), options=options)
                         if where.secure else grpc.aio.insecure_channel(dial, options=options))
        self._rpcs = grpc_wire.callables(self._channel)
        self._grpc = grpc

    async def aclose(self) -> None:
        await self._channel.close()

    def _rpc(self, method: str) -> grpc_wire.Rpc:
        rpc = grpc_wire.RPCS.get(method)
        if rpc is None:
            raise A2AClientError(f"{method} has no gRPC form: the peer's gRPC interface serves the A2A 1.0 "
                                 "methods only (choose its JSON-RPC interface for others)",
                                 {"method": method, "url": self.url}, url=self.url, method=method)
        return rpc

    def _request(self, rpc: grpc_wire.Rpc, params: dict[str, Any]) -> Any:
        try:
            return grpc_wire.from_dict(params, rpc.request)
        except grpc_wire.ConversionError as exc:
            raise A2AClientError(f"{rpc.name}: the params are not a valid {rpc.request}: {exc}",
                                 {"method": rpc.name}, url=self.url, method=rpc.name) from None

    async def _result(self, rpc: grpc_wire.Rpc, method: str, data: bytes) -> Any:
        """An answer's bytes as its 1.0 JSON-RPC result (a long one read in a worker
        thread: ``grpc_wire.read_aside``)."""
        if rpc.response == grpc_wire.EMPTY:
            return None
        read = functools.partial(grpc_wire.read, grpc_wire.message_class(rpc.response), data)
        try:
            return await grpc_wire.read_aside(read, len(data))
        except grpc_cost.TooManyValues as exc:
            raise InvalidAgentResponseError(
                f"{method} at {self.url} answered: {exc}",
                {"url": self.url, "method": method, "limit": grpc_cost.MAX_PARSE_COST}) from None
        except grpc_cost.MalformedMessage as exc:
            raise InvalidAgentResponseError(f"{method} at {self.url} answered with {exc}",
                                            {"url": self.url, "method": method}) from None

    async def call(self, method: str, params: dict[str, Any], extra: Mapping[str, str] | None = None) -> Any:
        """The result of one unary RPC, as its 1.0 JSON-RPC result."""
        rpc = self._rpc(method)
        if rpc.streaming:  # a stream where one answer is wanted: its last item
            last = None
            async for item in self.stream(method, params, self.timeout, extra):
                last = item
            return last
        handler = self._rpcs[rpc.name]
        try:
            answer = await handler(self._request(rpc, params), metadata=self._metadata(extra), timeout=self.timeout)
        except self._grpc.aio.AioRpcError as exc:
            raise self._error(method, exc) from None
        return await self._result(rpc, method, answer)

    async def stream(self, method: str, params: dict[str, Any], timeout: float | None,
                     extra: Mapping[str, str] | None = None) -> AsyncIterator[Any]:
        """Each item of a server-streaming RPC, as its 1.0 JSON-RPC result; ``timeout``
        is the longest wait for the next one."""
        rpc = self._rpc(method)
        call = self._rpcs[rpc.name](self._request(rpc, params), metadata=self._metadata(extra))
        try:
            while True:
                try:
                    item = await asyncio.wait_for(call.read(), timeout)
                except TimeoutError:
                    raise A2AClientTimeoutError(f"{method} at {self.url}: no event within {timeout:g}s",
                                                {"url": self.url, "method": method}, url=self.url,
                                                method=method) from None
                except self._grpc.aio.AioRpcError as exc:
                    raise self._error(method, exc) from None
                if item is self._grpc.aio.EOF:
                    return
                yield await self._result(rpc, method, item)
        finally:
            call.cancel()  # a no-op once the stream has ended

    def _metadata(self, extra: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
        return self.metadata + tuple((k.lower(), v) for k, v in (extra or {}).items())

    def _error(self, method: str, exc: Any) -> Exception:
        code = exc.code().name
        where, data = f"{method} at {self.url}", {"url": self.url, "method": method}
        trailing = tuple(exc.trailing_metadata() or ())
        has_details = any(key == grpc_wire.STATUS_DETAILS_KEY for key, _ in trailing)
        if code == "DEADLINE_EXCEEDED":
            return A2AClientTimeoutError(f"{where}: no answer within {self.timeout:g}s" if self.timeout else
                                         f"{where}: the deadline passed", data, url=self.url, method=method)
        if code == "UNAVAILABLE" and not has_details:
            return A2AClientConnectionError(f"{where}: cannot reach {self.target}: {exc.details()}", data,
                                            url=self.url, method=method)
        if code == "RESOURCE_EXHAUSTED" and not has_details:  # a message over a size limit, ours or theirs
            return InvalidAgentResponseError(f"{where}: {exc.details()}", {**data, "status": code})
        error = grpc_wire.error_of_status(code, exc.details() or "", trailing)
        remote = remote_error(error, url=self.url, method=method, standard=True)
        if (status := _AUTH_STATUS.get(code)) is not None:
            remote = with_auth_kind(remote, status)
        return remote
