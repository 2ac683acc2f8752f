"""The outbound A2A client and the server-mode interfaces.

``ServerConnectionConfig`` validates where a remote server is. ``A2AClient`` (in
``client_http``) calls it over HTTP; ``HttpServerClient`` and
``HttpRemoteExecutionClient`` implement the server-mode interfaces ``ServerClient``
and ``RemoteExecutionClient`` over it. The stubs raise A2ANotAvailableError, for tests
and for local mode. Importing this module does not import httpx.
"""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from cleveragents.a2a.errors import A2ANotAvailableError


class ServerConnectionConfig(BaseModel):
    """A remote CleverAgents / A2A server: an http(s) URL and, when it wants one, a
    non-empty token (without one, no credential is sent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    token: SecretStr | None = Field(default=None, repr=False)
    timeout_seconds: float = Field(default=30.0, gt=0, le=3600)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip()
        parts = urlsplit(value)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError("url must be an absolute http:// or https:// URL")
        if parts.username or parts.password:
            raise ValueError("put credentials in token, not in the url")
        return value.rstrip("/")

    @field_validator("token")
    @classmethod
    def _token_present(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("token must not be empty")
        return value


class ServerClient(Protocol):
    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


class RemoteExecutionClient(Protocol):
    async def execute(self, plan_id: str) -> Any: ...


class AuthClient(Protocol):
    async def authenticate(self) -> str: ...


def _unavailable(what: str) -> A2ANotAvailableError:
    return A2ANotAvailableError(f"{what} is not available in local mode", {"service": what})


class StubServerClient:
    def __init__(self, config: ServerConnectionConfig | None = None):
        self.config = config

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        raise _unavailable("server client")


class StubRemoteExecutionClient:
    async def execute(self, plan_id: str) -> Any:
        raise _unavailable("remote execution")


class StubAuthClient:
    async def authenticate(self) -> str:
        raise _unavailable("authentication client")


class HttpServerClient:
    """``ServerClient`` over HTTP: any method of a remote server, by name."""

    def __init__(self, config: ServerConnectionConfig | None = None, *, client: A2AClient | None = None):
        if client is None and config is None:
            raise ValueError("HttpServerClient needs a ServerConnectionConfig or an A2AClient")
        self.client = client or A2AClient(config)  # type: ignore[arg-type]
        self.config = self.client.config

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.client.call(method, params)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> HttpServerClient:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


class HttpRemoteExecutionClient(HttpServerClient):
    """``RemoteExecutionClient`` over HTTP: runs a plan on the remote server and
    answers with its status (``{"plan_id", "phase", "state"}``)."""

    async def execute(self, plan_id: str, *, wait: bool = True) -> Any:
        return await self.call("_cleveragents/plan/execute", {"plan_id": plan_id, "wait": wait})


# The public names of the outbound client live here; the code is split by concern.
from cleveragents.a2a.client_dialect import Interface, select_interface  # noqa: E402
from cleveragents.a2a.client_errors import (  # noqa: E402
    A2AClientConnectionError,
    A2AClientError,
    A2AClientHTTPError,
    A2AClientTargetRefusedError,
    A2AClientTimeoutError,
    A2ARemoteError,
)
from cleveragents.a2a.client_http import A2AClient  # noqa: E402
from cleveragents.a2a.client_wire import A2AStream  # noqa: E402

__all__ = [
    "A2AClient",
    "A2AClientConnectionError",
    "A2AClientError",
    "A2AClientHTTPError",
    "A2AClientTargetRefusedError",
    "A2AClientTimeoutError",
    "A2ARemoteError",
    "A2AStream",
    "AuthClient",
    "HttpRemoteExecutionClient",
    "HttpServerClient",
    "Interface",
    "RemoteExecutionClient",
    "ServerClient",
    "ServerConnectionConfig",
    "StubAuthClient",
    "StubRemoteExecutionClient",
    "StubServerClient",
    "select_interface",
]
