"""Server-mode client interfaces (seed 001, "Server Client Stubs").

``ServerConnectionConfig`` validates where a remote server is. The interfaces are
implemented over HTTP by the outbound client (the HTTP work); until then the stubs
raise A2aNotAvailableError, and tests use them to exercise server-mode code paths.
"""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from cleveragents.a2a.errors import A2aNotAvailableError


class ServerConnectionConfig(BaseModel):
    """A remote CleverAgents / A2A server: an http(s) URL and a non-empty token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    token: SecretStr = Field(repr=False)
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
    def _token_present(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().strip():
            raise ValueError("token must not be empty")
        return value


class ServerClient(Protocol):
    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


class RemoteExecutionClient(Protocol):
    async def execute(self, plan_id: str) -> Any: ...


class AuthClient(Protocol):
    async def authenticate(self) -> str: ...


def _unavailable(what: str) -> A2aNotAvailableError:
    return A2aNotAvailableError(f"{what} is not available in local mode", {"service": what})


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
