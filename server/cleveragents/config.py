"""Runtime settings shared by every entry point."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from cleveragents.domain.json_limits import MAX_DEPTH, MAX_METADATA_SIZE

STATE_DIRNAME = ".cleveragents"
DEFAULT_TOOL_TIMEOUT = 300.0


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the backend works and keeps its state.

    ``state_dir`` defaults to ``<workspace>/.cleveragents``; ``memory`` keeps everything
    in process (nothing is written to disk).
    """

    workspace: Path = field(default_factory=Path.cwd)
    state_dir: Path | None = None
    memory: bool = False
    # Where the state is kept instead of SQLite under ``state_dir``: a PostgreSQL URL
    # (``postgresql://user@host/db``), for several HTTP replicas on one database.
    store: str | None = None
    # With PostgreSQL: how often each replica fails the running tasks of replicas that
    # are gone (killed, say), in seconds; the most such a task stays "working".
    replica_sweep_seconds: float = 10.0
    event_buffer: int = 1024
    default_actor: str = "local/default"
    # The automation profile of a plan created without one.
    automation_profile: Literal["manual", "supervised", "autonomous"] = "supervised"
    # Finished agent tasks kept in the store; the oldest go first, live ones never.
    max_terminal_tasks: int = 10_000
    # Bounded input (domain/json_limits.py): how deep objects and arrays may nest in a
    # request's params, and how large one `metadata` object may be, in bytes of JSON.
    max_json_depth: int = MAX_DEPTH
    max_metadata_size: int = MAX_METADATA_SIZE
    # HTTP mode: accepted bearer tokens and API keys (any one is enough; none: no auth).
    auth_tokens: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    api_key_header: str = "X-API-Key"
    # HTTP mode: OAuth2 access tokens (JWTs) checked against an authorization server's
    # keys; from Python or the configuration file's [oauth2] table (docs/http.md).
    oauth2: OAuth2 | None = None
    # HTTP mode: Host names served besides loopback and the public URL's (docs/http.md),
    # and the browser origins allowed to call (CORS); none by default.
    allowed_hosts: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    # Networks (CIDR) that push notifications may reach although they are loopback,
    # private, link-local or otherwise not public; none by default.
    push_allowed_networks: tuple[str, ...] = ()
    # Signed agent cards (docs/security.md): keys that sign the served cards (PEM or JWK
    # files, comma-separated, each `path` or `path#kid`; relative to the workspace), the
    # optional `jku` the signatures name, and how the outbound client treats a peer's
    # card: "off", "warn" or "require" a valid signature by one of the trusted keys.
    card_signing_keys: str | None = None
    card_signing_jku: str | None = None
    card_signature_policy: Literal["off", "warn", "require"] = "off"
    card_trusted_keys: str | None = None
    card_trusted_jwks_url: str | None = None
    # OpenTelemetry spans (docs/tracing.md); off costs nothing.
    tracing: bool = False
    # Actors (docs/actors.md). API keys are never settings: an actor reads the variable
    # named by its `api_key_env` when it makes a call.
    openai_base_url: str | None = None  # default https://api.openai.com/v1
    openai_api_key_env: str = "OPENAI_API_KEY"
    ollama_base_url: str | None = None  # default http://127.0.0.1:11434/v1
    actor_timeout: float = 120.0
    max_tool_rounds: int = 8
    # Seconds a tool call (a plan step's, or one an agent task makes) may run before it
    # fails with a BudgetExceededError naming this limit.
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    # Budgets from the usage providers report; None is no limit.
    session_max_tokens: int | None = None
    session_max_cost: float | None = None
    plan_max_tokens: int | None = None
    plan_max_cost: float | None = None
    # The settings the environment or the command line gave: a config file's
    # [defaults] never override them.
    explicit: frozenset[str] = frozenset()

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from ``CLEVERAGENTS_*`` variables, then explicit overrides."""
        env: dict[str, object] = {}
        if value := os.environ.get("CLEVERAGENTS_WORKSPACE"):
            env["workspace"] = Path(value)
        if value := os.environ.get("CLEVERAGENTS_STATE_DIR"):
            env["state_dir"] = Path(value)
        if value := os.environ.get("CLEVERAGENTS_STORE"):
            env["store"] = value
        if os.environ.get("CLEVERAGENTS_MEMORY", "").lower() in {"1", "true", "yes"}:
            env["memory"] = True
        if value := os.environ.get("CLEVERAGENTS_MAX_TERMINAL_TASKS"):
            env["max_terminal_tasks"] = int(value)
        for key, name in _LIST_VARIABLES:
            if value := os.environ.get(name):
                env[key] = tuple(t.strip() for t in value.split(",") if t.strip())
        if value := os.environ.get("CLEVERAGENTS_API_KEY_HEADER"):
            env["api_key_header"] = value
        for key, name in _TEXT_VARIABLES:
            if value := os.environ.get(name):
                env[key] = value
        if value := os.environ.get("CLEVERAGENTS_TRACING", "").strip():
            env["tracing"] = value.lower() in {"1", "true", "yes", "on"}
        env.update(_actor_env())
        env.update(_numbers_env())
        env.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**env, explicit=frozenset(env))  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        # Paths may be given as strings: Settings(workspace="~/src/app").
        for key in ("workspace", "state_dir"):
            if isinstance(value := getattr(self, key), str):
                object.__setattr__(self, key, Path(value))
        for key in ("auth_tokens", "api_keys", "allowed_hosts", "cors_origins", "push_allowed_networks"):
            if isinstance(value := getattr(self, key), str):
                raise ValueError(f"{key} is a list of strings, not one string: {key}=({value!r},)")
            object.__setattr__(self, key, tuple(value))
        if isinstance(self.oauth2, Mapping):
            object.__setattr__(self, "oauth2", OAuth2(**self.oauth2))
        elif self.oauth2 is not None and not isinstance(self.oauth2, OAuth2):
            raise ValueError(f"oauth2 is an OAuth2(...) or a dict of its fields, not {type(self.oauth2).__name__}")
        if self.store is not None and not self.store.startswith(("postgresql://", "postgres://")):
            raise ValueError("store must be a PostgreSQL URL (postgresql://user@host:5432/db); "
                             "without it the state is kept in SQLite under the state directory")
        if self.store is not None and self.memory:
            raise ValueError("memory and store exclude each other: keep the state in memory, or in PostgreSQL")
        if self.card_signature_policy not in ("off", "warn", "require"):
            raise ValueError(f"card_signature_policy is off, warn or require, not {self.card_signature_policy!r}")
        for network in self.push_allowed_networks:
            try:
                ipaddress.ip_network(network.strip(), strict=False)
            except ValueError:
                raise ValueError(f"push_allowed_networks: {network!r} is not a network (e.g. 10.0.0.0/8, ::1)") from None

    def with_file_defaults(self, defaults: Mapping[str, object]) -> Settings:
        """These settings with a config file's ``[defaults]`` where a setting was not
        given explicitly and still has its built-in value (env > file > built-in)."""
        builtin = {f.name: f.default for f in dataclasses.fields(self)}
        chosen = {key: value for key, value in defaults.items()
                  if key in builtin and key not in self.explicit and getattr(self, key) == builtin[key]}
        return dataclasses.replace(self, **chosen) if chosen else self  # type: ignore[arg-type]

    @property
    def resolved_workspace(self) -> Path:
        return self.workspace.expanduser().resolve()

    @property
    def resolved_state_dir(self) -> Path:
        if self.state_dir is not None:
            return self.state_dir.expanduser().resolve()
        return self.resolved_workspace / STATE_DIRNAME


# Comma-separated lists.
_LIST_VARIABLES = (
    ("auth_tokens", "CLEVERAGENTS_AUTH_TOKENS"),
    ("api_keys", "CLEVERAGENTS_API_KEYS"),
    ("allowed_hosts", "CLEVERAGENTS_ALLOWED_HOSTS"),
    ("cors_origins", "CLEVERAGENTS_CORS_ORIGINS"),
    ("push_allowed_networks", "CLEVERAGENTS_PUSH_ALLOWED_NETWORKS"),
)

# Strings taken as they are.
_TEXT_VARIABLES = (
    ("card_signing_keys", "CLEVERAGENTS_CARD_SIGNING_KEYS"),
    ("card_signing_jku", "CLEVERAGENTS_CARD_SIGNING_JKU"),
    ("card_signature_policy", "CLEVERAGENTS_CARD_SIGNATURE_POLICY"),
    ("card_trusted_keys", "CLEVERAGENTS_CARD_TRUSTED_KEYS"),
    ("card_trusted_jwks_url", "CLEVERAGENTS_CARD_TRUSTED_JWKS_URL"),
)

# Numbers the environment may set: the input limits and the actors' settings.
_NUMBERS: tuple[tuple[str, str, type], ...] = (
    ("max_json_depth", "CLEVERAGENTS_MAX_JSON_DEPTH", int),
    ("max_metadata_size", "CLEVERAGENTS_MAX_METADATA_SIZE", int),
    ("actor_timeout", "CLEVERAGENTS_ACTOR_TIMEOUT", float),
    ("max_tool_rounds", "CLEVERAGENTS_MAX_TOOL_ROUNDS", int),
    ("tool_timeout", "CLEVERAGENTS_TOOL_TIMEOUT", float),
    ("replica_sweep_seconds", "CLEVERAGENTS_REPLICA_SWEEP_SECONDS", float),
    ("session_max_tokens", "CLEVERAGENTS_SESSION_MAX_TOKENS", int),
    ("session_max_cost", "CLEVERAGENTS_SESSION_MAX_COST", float),
    ("plan_max_tokens", "CLEVERAGENTS_PLAN_MAX_TOKENS", int),
    ("plan_max_cost", "CLEVERAGENTS_PLAN_MAX_COST", float),
)


POSITIVE = frozenset({"tool_timeout", "replica_sweep_seconds"})  # settings that must be above 0 (a file's [defaults] too)


def _actor_env() -> dict[str, object]:
    """The actor settings the environment gives; the providers' own variables
    (``OPENAI_BASE_URL``, ``OLLAMA_HOST``) count when ours are not set."""
    env: dict[str, object] = {}
    if value := os.environ.get("CLEVERAGENTS_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL"):
        env["openai_base_url"] = value
    if value := os.environ.get("CLEVERAGENTS_OPENAI_API_KEY_ENV"):
        env["openai_api_key_env"] = value
    if value := os.environ.get("CLEVERAGENTS_OLLAMA_BASE_URL"):
        env["ollama_base_url"] = value
    elif value := os.environ.get("OLLAMA_HOST"):  # host[:port] or a URL, without the /v1
        url = value if "://" in value else f"http://{value}"
        env["ollama_base_url"] = url.rstrip("/") + "/v1"
    return env


def _numbers_env() -> dict[str, object]:
    env: dict[str, object] = {}
    for key, name, kind in _NUMBERS:
        if value := os.environ.get(name):
            try:
                env[key] = kind(value)
            except ValueError:
                raise ValueError(f"{name} must be a number, not {value!r}") from None
            if key in POSITIVE and not env[key] > 0:  # type: ignore[operator]
                raise ValueError(f"{name} must be more than 0, not {value!r}")
    return env


# -- OAuth2 ---------------------------------------------------------------------------
# The JWS algorithms a token may be signed with: asymmetric ones only, since the keys
# are public (a JWKS); HS256 and "none" never verify a token.
JWT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
# RFC 6749's scope-token: printable ASCII but space, '"' and '\\'.
_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")


class OAuth2ConfigError(ValueError):
    """A bad OAuth2 setting; ``loc`` names it (``("jwks_url",)``, ``("scopes", "a:b")``)."""

    def __init__(self, loc: str | tuple[str, ...], message: str):
        self.loc = (loc,) if isinstance(loc, str) else loc
        self.message = message
        super().__init__(f"oauth2.{'.'.join(self.loc)}: {message}")


@dataclass(frozen=True, slots=True)
class OAuth2:
    """OAuth2 with JWT access tokens (HTTP mode): the issuer and audience a token must
    name, where its signing keys are (a JWKS at a URL or in a file), what the card tells
    clients (``token_url`` and the other flow URLs), and what each scope grants.

    ``scopes`` maps a scope to the methods it grants: groups (``read``, ``send``,
    ``admin``) or method-name patterns (``_cleveragents/plan/*``, ``*``). Without
    ``scopes``, any valid token may call every method."""

    issuer: str
    audience: str | tuple[str, ...]
    jwks_url: str | None = None
    jwks_file: Path | str | None = None
    token_url: str | None = None
    authorization_url: str | None = None
    device_authorization_url: str | None = None
    refresh_url: str | None = None
    metadata_url: str | None = None
    scopes: Mapping[str, Sequence[str]] = field(default_factory=dict, hash=False)
    algorithms: tuple[str, ...] = JWT_ALGORITHMS
    leeway: float = 30.0  # seconds of clock skew allowed on exp, nbf and iat
    jwks_cache_seconds: float = 300.0  # keys older than this are fetched again
    # RFC 9068: an access token's header says `typ: at+jwt`, so an ID token (`JWT`) of
    # the same issuer can't pass for one. Some providers type their access tokens
    # `JWT` (or not at all); this lets those in too.
    accept_plain_jwt: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.issuer, str) or not self.issuer.strip():
            raise OAuth2ConfigError("issuer", "required: the `iss` every token must carry")
        audience = (self.audience,) if isinstance(self.audience, str) else tuple(self.audience or ())
        if not audience or not all(isinstance(a, str) and a.strip() for a in audience):
            raise OAuth2ConfigError("audience", "required: the `aud` a token must name (a string or a list)")
        object.__setattr__(self, "audience", audience[0] if len(audience) == 1 else audience)
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise OAuth2ConfigError("jwks_url", "give exactly one of jwks_url and jwks_file: where the signing keys are")
        if self.jwks_url is not None:
            _check_url("jwks_url", self.jwks_url, tls=True)
        if self.jwks_file is not None:
            object.__setattr__(self, "jwks_file", Path(self.jwks_file).expanduser())
        if self.token_url is None:
            raise OAuth2ConfigError("token_url", "required: the card's OAuth2 flow tells clients where to get tokens")
        for key in ("token_url", "authorization_url", "device_authorization_url", "refresh_url", "metadata_url"):
            if (value := getattr(self, key)) is not None:
                _check_url(key, value)
        if self.authorization_url is not None and self.device_authorization_url is not None:
            raise OAuth2ConfigError("device_authorization_url", "give authorization_url or device_authorization_url, "
                                                                "not both: the card declares one flow")
        algorithms = (self.algorithms,) if isinstance(self.algorithms, str) else tuple(self.algorithms)
        wrong = [a for a in algorithms if a not in JWT_ALGORITHMS]
        if not algorithms or wrong:
            raise OAuth2ConfigError("algorithms", f"{', '.join(map(repr, wrong)) or 'none given'}: choose among "
                                                  f"{', '.join(JWT_ALGORITHMS)} (asymmetric ones only)")
        object.__setattr__(self, "algorithms", algorithms)
        object.__setattr__(self, "scopes", _scope_table(self.scopes))
        if not 0 <= self.leeway <= 300:
            raise OAuth2ConfigError("leeway", "seconds from 0 to 300")
        if not 10 <= self.jwks_cache_seconds <= 86400:
            raise OAuth2ConfigError("jwks_cache_seconds", "seconds from 10 to 86400")
        if not isinstance(self.accept_plain_jwt, bool):
            raise OAuth2ConfigError("accept_plain_jwt", "true or false")

    @property
    def audiences(self) -> tuple[str, ...]:
        return (self.audience,) if isinstance(self.audience, str) else self.audience


def _check_url(key: str, value: Any, tls: bool = False) -> None:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise OAuth2ConfigError(key, f"not an http(s) URL: {value!r}")
    if tls and parts.scheme != "https" and not _is_loopback(parts.hostname):
        raise OAuth2ConfigError(key, "must be https (plain http only on a loopback address): the keys decide who gets in")


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _scope_table(scopes: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(scopes, Mapping):
        raise OAuth2ConfigError("scopes", "a table of scope = [what it grants]")
    table: dict[str, tuple[str, ...]] = {}
    for scope, grants in scopes.items():
        if not isinstance(scope, str) or not _SCOPE_TOKEN.match(scope):
            raise OAuth2ConfigError(("scopes", str(scope)), "not a scope name (printable ASCII, no spaces or quotes)")
        grants = (grants,) if isinstance(grants, str) else grants
        if not isinstance(grants, Sequence) or not grants or not all(isinstance(g, str) and g.strip() for g in grants):
            raise OAuth2ConfigError(("scopes", scope), "a list of groups (read, send, admin) or method patterns")
        table[scope] = tuple(g.strip() for g in grants)
    return table
