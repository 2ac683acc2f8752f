"""Actor names to actors: ``provider/model``, or a name the configuration declares.

Providers: ``local`` (the deterministic default), ``openai`` (any OpenAI-compatible
endpoint), ``ollama`` (the same, with the local default URL), ``python`` (an
in-process agent, ``python/<module>:<callable>``) and ``a2a`` (a remote A2A agent,
``a2a/<url>``). A declared actor (``[actors."team/reviewer"]`` in the configuration
file) may name its provider and model and override the provider's settings.
Resolving does no I/O: a bad key or an unreachable endpoint shows on the first turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from cleveragents.config import Settings
from cleveragents.domain.actor import Actor, ActorError, Budget
from cleveragents.domain.errors import ValidationError
from cleveragents.infra.actors.openai import DEFAULT_BASE_URL, ChatSettings, OpenAIActor

OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"
PROVIDERS = ("a2a", "local", "ollama", "openai", "python")
# Builds the client of a remote agent: (url) -> an object with `stream(message)`.
RemoteClientFactory = Callable[[str, str | None], Any]  # (url, the variable holding its token)


def known_providers() -> tuple[str, ...]:
    return PROVIDERS


def resolve_actor(name: str, settings: Settings, *, declared: Mapping[str, Mapping[str, Any]] | None = None,
                  local: Callable[[str], Actor] | None = None, remote: RemoteClientFactory | None = None,
                  model_http: Callable[[], Any] | None = None) -> Actor:
    """The actor called ``name``. ``ValidationError`` (naming the known providers) for a
    name no provider serves. ``local`` builds local actors and ``remote`` the clients
    of remote agents (the composition root has what they need); ``model_http`` is the
    HTTP client model actors share (a kept ``openai.model_client``)."""
    spec = dict((declared or {}).get(name) or {})
    provider_part, _, model_part = name.partition("/")
    provider = str(spec.get("provider") or provider_part)
    model = str(spec.get("model") or model_part)
    if not model:
        raise _invalid(name, "an actor is named provider/model, e.g. openai/gpt-4o")
    if provider in ("openai", "ollama"):
        actor: Any = OpenAIActor(name, model, _chat_settings(provider, spec, settings), http=model_http)
    elif provider == "python":
        from cleveragents.infra.actors.python import PythonActor

        actor = PythonActor(name, model)
    elif provider == "a2a":
        from cleveragents.infra.actors.remote_a2a import RemoteA2aActor

        url = str(spec.get("base_url") or model)
        _check_url(name, url)
        if remote is None:
            raise ActorError(f"{name}: remote A2A agents are not available here", {"actor": name, "reason": "no_client"})
        token_env = str(spec["api_key_env"]) if spec.get("api_key_env") else None
        actor = RemoteA2aActor(name, url, lambda: remote(url, token_env))
    elif provider == "local":
        if local is None:
            raise ActorError(f"{name}: the local actor is not available here", {"actor": name, "reason": "no_local"})
        actor = local(name)
    else:
        raise _invalid(name, f"unknown actor provider {provider!r}; known providers: {', '.join(PROVIDERS)}",
                       provider=provider)
    budget = Budget(spec.get("token_budget"), spec.get("cost_budget"))
    if budget.limited:
        actor.budget = budget
    return actor  # type: ignore[no-any-return]


def is_local_actor(name: str, declared: Mapping[str, Any] | None = None) -> bool:
    """Whether ``name`` is a ``local`` actor (the deterministic one), by its name or by
    the provider its declaration gives."""
    provider = (declared or {}).get("provider") or name.partition("/")[0]
    return bool(provider == "local")


def _chat_settings(provider: str, spec: Mapping[str, Any], settings: Settings) -> ChatSettings:
    if provider == "ollama":
        base_url = settings.ollama_base_url or OLLAMA_BASE_URL
        key_env = "OLLAMA_API_KEY"  # Ollama needs none; a proxy in front of it may
    else:
        base_url = settings.openai_base_url or DEFAULT_BASE_URL
        key_env = settings.openai_api_key_env
    return ChatSettings(
        base_url=str(spec.get("base_url") or base_url),
        api_key_env=str(spec.get("api_key_env") or key_env),
        timeout=float(spec.get("timeout") or settings.actor_timeout),
        max_tool_rounds=int(spec.get("max_tool_rounds") or settings.max_tool_rounds),
        stream=bool(spec.get("stream", True)),
        input_cost_per_mtok=float(spec.get("input_cost_per_mtok") or 0.0),
        output_cost_per_mtok=float(spec.get("output_cost_per_mtok") or 0.0),
        extra_body=dict(spec.get("extra_body") or {}),
    )


def _check_url(name: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _invalid(name, "a remote A2A actor is named a2a/<http or https URL>, e.g. a2a/http://127.0.0.1:9999")


def _invalid(name: str, msg: str, **extra: Any) -> ValidationError:
    return ValidationError.for_field(["actor_name"], msg, message=f"Invalid actor {name!r}: {msg}",
                                     actor_name=name, known_providers=list(PROVIDERS), **extra)
