"""What the settings and the workspace's configuration files give: the parts of the
composition that entry points need without building a ``Container`` (checking the
configuration before serving, the OAuth2 settings of an HTTP app, a store migration,
the stdio server's early health answers), and that the container builds from.

Light on import, like the container: the stdio server calls ``configuration_problem``
before its first answer.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cleveragents.config import OAuth2, Settings

if TYPE_CHECKING:
    from cleveragents.a2a.card_cache import CardCache
    from cleveragents.a2a.card_signing import CardVerifier
    from cleveragents.a2a.client_http import A2AClient
    from cleveragents.app.health import HealthService
    from cleveragents.domain.guards import GuardPolicy
    from cleveragents.domain.json_limits import JsonLimits
    from cleveragents.http_clients import KeptClients
    from cleveragents.infra.config_file import Configuration


def actor_providers() -> frozenset[str]:
    """Actor providers that exist in this build (docs/actors.md). The resolver is
    imported here, not at the top: the stdio entry point imports this module for
    ``configuration_problem`` before its first answer, and the actors are heavy."""
    from cleveragents.infra.actors.resolve import PROVIDERS

    return frozenset(PROVIDERS)


def known_providers() -> list[str] | tuple[str, ...]:
    """The actor providers, as the actor resolver describes them."""
    from cleveragents.infra.actors.resolve import known_providers as resolver_providers

    return resolver_providers()


def load_configuration(settings: Settings) -> Configuration:
    """The configuration files of ``settings``' workspace (``ConfigError`` if one is bad)."""
    from cleveragents.app.registry import provider_rows
    from cleveragents.infra.config_file import load_config

    providers = [row["provider"] for row in provider_rows(known_providers())]
    return load_config(settings.resolved_workspace, providers)


def migrate_store(url: str) -> int:
    """Blocking: apply the PostgreSQL store's missing migrations; its schema version.
    ``ValueError`` for a URL or an install that can't be used, ``RuntimeError`` when the
    database can't be opened or is newer than this version."""

    if importlib.util.find_spec("psycopg") is None:
        raise ValueError("the PostgreSQL store needs the postgresql extra: pip install '.[postgresql]'")
    from cleveragents.infra.store.postgres import PostgresStore

    async def run() -> int:
        store = PostgresStore(url)
        try:
            await store.open()
            return store.schema_version
        finally:
            await store.close()

    return asyncio.run(run())


def json_limits(settings: Settings) -> JsonLimits:
    """The limits on a request's params (``ValueError`` when a setting is out of range)."""
    from cleveragents.domain.json_limits import JsonLimits

    return JsonLimits(settings.max_json_depth, settings.max_metadata_size)


def configuration_problem(settings: Settings) -> str | None:
    """The one-line message of a bad configuration (a file, or a setting out of range),
    for an entry point to check before it serves. Only the files are read, and only
    when one exists."""
    from cleveragents.infra.config_file import ConfigError, user_config_path, workspace_config_path

    try:
        if user_config_path().is_file() or workspace_config_path(settings.resolved_workspace).is_file():
            settings = settings.with_file_defaults(load_configuration(settings).defaults)
        json_limits(settings)
    except ConfigError as exc:
        return exc.message
    except ValueError as exc:
        return str(exc)
    if settings.store is not None and importlib.util.find_spec("psycopg") is None:
        return ("the PostgreSQL store needs the postgresql extra: pip install '.[postgresql]' "
                "(psycopg is not installed)")
    return None


def early_health_service(settings: Settings) -> tuple[HealthService, Callable[[], None]] | None:
    """A health service on the store's file opened on its own (blocking), and what
    closes it: for health checks answered before the container is built (the stdio
    server's, ``transports/lsp/early_health.py``). ``None`` where the container's
    answer could differ: a store other than SQLite under the state directory, a
    configuration file (it may move the store, or be broken), tracing on (the facade
    makes the spans), or a workspace that does not exist."""
    from cleveragents.app.health import HealthService
    from cleveragents.infra.config_file import user_config_path, workspace_config_path
    from cleveragents.infra.store.sqlite_probe import SqliteProbe

    workspace = settings.resolved_workspace
    if settings.store is not None or settings.memory or settings.tracing or not workspace.is_dir() \
            or user_config_path().is_file() or workspace_config_path(workspace).is_file():
        return None
    probe = SqliteProbe.open_in(settings.resolved_state_dir)
    # Only check() is served from it: no actors or providers to report.
    return HealthService(probe, workspace, (), ()), probe.close


def remote_client(settings: Settings, url: str, card_verifier: CardVerifier | None = None,
                  token_env: str | None = None, card_cache: CardCache | None = None,
                  connections: KeptClients[tuple[str, float]] | None = None) -> A2AClient:
    """The outbound A2A client of a remote agent (``a2a`` actors). Its token comes from
    ``token_env`` (a declared actor's ``api_key_env``), so no agent sees another's; an
    agent declared without one gets ``CLEVERAGENTS_A2A_TOKEN``. Unset: no token.
    With ``connections``, its connection to the agent is kept between turns."""
    import os

    from cleveragents.a2a.client import ServerConnectionConfig
    from cleveragents.a2a.client_http import A2AClient

    token = os.environ.get(token_env or "CLEVERAGENTS_A2A_TOKEN") or None  # unset: no credential is sent
    timeout = min(max(settings.actor_timeout, 1.0), 3600.0)
    return A2AClient(ServerConnectionConfig(url=url, token=token, timeout_seconds=timeout), card_verifier=card_verifier,
                     card_cache=card_cache, http=connections.get((url, timeout)) if connections is not None else None)


def configured_oauth2(settings: Settings) -> OAuth2 | None:
    """``settings.oauth2``, else the configuration files' ``[oauth2]`` table (read only
    when a file exists). A bad file gives ``None``: the services report it when they
    start, and until it is fixed they answer no call."""
    if settings.oauth2 is not None:
        return settings.oauth2
    from cleveragents.config import OAuth2

    table = oauth2_file_table(settings)
    return OAuth2(**table) if table else None


def oauth2_file_table(settings: Settings) -> dict[str, Any]:
    """The configuration files' ``[oauth2]`` table (read only when a file exists);
    empty when there is none or a file is bad."""
    from cleveragents.infra.config_file import ConfigError, user_config_path, workspace_config_path

    if not (user_config_path().is_file() or workspace_config_path(settings.resolved_workspace).is_file()):
        return {}
    try:
        return dict(load_configuration(settings).oauth2)
    except ConfigError:
        return {}


def guard_policy(policy: GuardPolicy, workspace: Path, state_dir: Path,
                 protected_paths: tuple[str, ...] = ()) -> GuardPolicy:
    """The configuration's protected paths added to the list; and plans never touch
    the state directory, wherever it is inside the workspace (it comes last in the
    list, so no ``!`` pattern takes it off)."""
    patterns = (*policy.protected_paths, *protected_paths)
    try:
        inside = state_dir.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        # Outside the workspace: the path guards keep plans away from it, and a command never sees it.
        return policy.with_overrides(protected_paths=patterns)
    if inside == ".":
        return policy.with_overrides(protected_paths=patterns)
    protected = policy.protected if inside in policy.protected else (*policy.protected, inside)
    return policy.with_overrides(protected=protected, protected_paths=(*patterns, f"/{inside}/"))
