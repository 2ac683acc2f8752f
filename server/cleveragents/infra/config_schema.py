"""The schema of ``config.toml`` (pydantic), kept apart so that reading the files
imports pydantic only when one exists.

``[defaults]`` accepts the scalar fields of ``Settings`` (strings, numbers, booleans;
not where the workspace or the state is, nor lists such as the HTTP tokens, which come
from the environment), with their types: a setting added to ``Settings`` can be given
a default in the file without a change here.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, create_model
from pydantic import ValidationError as PydanticError

from cleveragents.config import POSITIVE, OAuth2, OAuth2ConfigError, Settings

# Where the backend works can't come from a file inside it.
NOT_IN_FILE = frozenset({"workspace", "state_dir", "memory", "store", "explicit"})
SECTIONS = ("defaults", "actors", "projects", "resources", "shell", "protected", "oauth2")
# The syntax session.create accepts for an actor name.
ACTOR_NAME = r"^[a-z0-9][a-z0-9_.\-]*/\S+$"
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(max_length=2000)]


class SchemaProblem(Exception):
    def __init__(self, loc: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.loc, self.message = loc, message


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ActorEntry(_Entry):
    """What an actor resolver gets for a declared actor (names as in its chat settings)."""

    provider: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")] | None = None
    model: Name | None = None
    description: Text | None = None
    base_url: Annotated[str, StringConstraints(pattern=r"^https?://\S+$")] | None = None
    api_key_env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_tool_rounds: int | None = Field(default=None, ge=1)
    stream: bool | None = None
    input_cost_per_mtok: float | None = Field(default=None, ge=0)
    output_cost_per_mtok: float | None = Field(default=None, ge=0)
    # Sent with every request as is (temperature, top_p, ...).
    extra_body: dict[str, Any] | None = None
    token_budget: int | None = Field(default=None, ge=1)
    cost_budget: float | None = Field(default=None, ge=0)


class ProjectEntry(_Entry):
    path: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    description: Text | None = None


class ResourceEntry(_Entry):
    name: Name | None = None
    type_name: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    uri: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    description: Text | None = None


def _command_prefix(entry: str) -> str:
    import shlex

    try:
        words = shlex.split(entry)
    except ValueError as exc:
        raise ValueError(f"not a command line: {exc}") from None
    if not words or "/" in words[0]:
        raise ValueError("a command prefix starts with a program's name, not a path")
    return entry


CommandPrefix = Annotated[str, StringConstraints(min_length=1, max_length=500), AfterValidator(_command_prefix)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


def _readable_directory(entry: str) -> str:
    import os

    if not os.path.isabs(os.path.expanduser(entry)):
        raise ValueError("a directory commands may read is an absolute path (or starts with ~)")
    return entry


ReadPath = Annotated[str, StringConstraints(min_length=1, max_length=4096), AfterValidator(_readable_directory)]


class ShellEntry(_Entry):
    """``shell.run``'s policy: the command prefixes it may run (replacing the built-in
    list), the extra environment variables its commands see, and their sandbox:
    ``sandbox = "off"`` runs them unconfined, ``network = true`` lets them use the
    network, ``read`` adds directories they may read."""

    allow: list[CommandPrefix] | None = Field(default=None, max_length=200)
    env: list[EnvName] | None = Field(default=None, max_length=200)
    sandbox: Literal["on", "off"] | None = None
    network: bool | None = None
    read: list[ReadPath] | None = Field(default=None, max_length=200)


ProtectedPattern = Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"^[^\x00\n]*$")]


class ProtectedEntry(_Entry):
    """Patterns added to the protected-paths list (gitignore syntax; ``!`` takes a
    path off it)."""

    paths: list[ProtectedPattern] | None = Field(default=None, max_length=1000)


Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)]
Grant = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class OAuth2Entry(_Entry):
    """HTTP mode's OAuth2 (``cleveragents.config.OAuth2`` checks what the types don't)."""

    issuer: Annotated[str, StringConstraints(min_length=1, max_length=2000)]
    audience: Annotated[str, StringConstraints(min_length=1, max_length=2000)] | list[Name]
    jwks_url: Url | None = None
    jwks_file: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = None
    token_url: Url | None = None
    authorization_url: Url | None = None
    device_authorization_url: Url | None = None
    refresh_url: Url | None = None
    metadata_url: Url | None = None
    scopes: dict[str, Grant | list[Grant]] | None = Field(default=None, max_length=200)
    algorithms: list[Annotated[str, StringConstraints(max_length=20)]] | None = Field(default=None, max_length=20)
    leeway: float | None = Field(default=None, ge=0, le=300)
    jwks_cache_seconds: float | None = Field(default=None, ge=10, le=86400)
    accept_plain_jwt: bool | None = None


def _oauth2(document: dict[str, Any], base: Path) -> dict[str, Any]:
    if "oauth2" not in document:
        return {}
    entry = _check(OAuth2Entry, document["oauth2"], ("oauth2",))
    if "jwks_file" in entry:
        path = Path(entry["jwks_file"]).expanduser()
        entry["jwks_file"] = str(path if path.is_absolute() else (base / path).resolve())
    try:
        OAuth2(**entry)
    except OAuth2ConfigError as exc:
        raise SchemaProblem(("oauth2", *exc.loc), exc.message) from None
    return entry


def _scalar(hint: Any) -> bool:
    """Whether a TOML scalar can be the value (str, int, float, bool, a Literal; optional or not)."""
    if typing.get_origin(hint) is typing.Literal:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return all(_scalar(arg) for arg in typing.get_args(hint) if arg is not type(None))
    return hint in (str, int, float, bool)


@functools.cache
def defaults_model() -> type[BaseModel]:
    hints = typing.get_type_hints(Settings)
    fields: dict[str, Any] = {
        f.name: (hints[f.name], None) for f in dataclasses.fields(Settings)
        if f.name not in NOT_IN_FILE and _scalar(hints[f.name])
    }
    return create_model("Defaults", __config__=ConfigDict(extra="forbid"), **fields)


def _problem(exc: PydanticError, prefix: tuple[str | int, ...], value: Any) -> SchemaProblem:
    """The first error, its location cut to the keys that are in the file (pydantic
    appends the names of union members), plus the missing key if one is."""
    error = exc.errors()[0]
    loc: list[str | int] = []
    node = value
    for part in error["loc"]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            if error["type"] == "missing":
                loc.append(part)
            break
        loc.append(part)
    message = {"extra_forbidden": "unknown key", "missing": "required key is missing"}.get(error["type"], error["msg"])
    return SchemaProblem((*prefix, *loc), message)


def _check(model: type[BaseModel], value: Any, loc: tuple[str | int, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaProblem(loc, "must be a table")
    try:
        return model.model_validate(value).model_dump(exclude_unset=True, exclude_none=True)
    except PydanticError as exc:
        raise _problem(exc, loc, value) from None


def _tables(document: dict[str, Any], section: str) -> dict[str, Any]:
    value = document.get(section, {})
    if not isinstance(value, dict):
        raise SchemaProblem((section,), f"must be tables: [{section}.<name>]")
    return value


def _actors(document: dict[str, Any], providers: set[str] | None) -> dict[str, dict[str, Any]]:
    actors = {}
    for name, value in _tables(document, "actors").items():
        loc: tuple[str | int, ...] = ("actors", name)
        if not re.match(ACTOR_NAME, name):
            raise SchemaProblem(loc, "an actor's name is provider/model, e.g. \"openai/gpt-4o\"")
        entry = _check(ActorEntry, value, loc)
        prefix, _, rest = name.partition("/")
        entry.setdefault("provider", prefix)
        entry.setdefault("model", rest)
        if providers is not None and entry["provider"] not in providers:
            where = (*loc, "provider") if "provider" in value else loc
            raise SchemaProblem(where, f"unknown provider {entry['provider']!r}; known: {', '.join(sorted(providers))}")
        actors[name] = entry
    return actors


def _projects(document: dict[str, Any], base: Path) -> dict[str, dict[str, Any]]:
    projects = {}
    for name, value in _tables(document, "projects").items():
        entry = _check(ProjectEntry, value, ("projects", name))
        path = Path(entry["path"]).expanduser()
        entry["path"] = str((base / path).resolve() if not path.is_absolute() else path.resolve())
        projects[name] = entry
    return projects


def _resources(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    value = document.get("resources", {})
    named: list[tuple[tuple[str | int, ...], Any, str | None]]
    if isinstance(value, list):
        named = [(("resources", index), item, None) for index, item in enumerate(value)]
    elif isinstance(value, dict):
        named = [(("resources", name), item, name) for name, item in value.items()]
    else:
        raise SchemaProblem(("resources",), "must be [[resources]] or [resources.<name>] tables")
    resources: dict[str, dict[str, Any]] = {}
    for loc, item, name in named:
        entry = _check(ResourceEntry, item, loc)
        if name is None and "name" not in entry:
            raise SchemaProblem((*loc, "name"), "required key is missing")
        if name is not None and entry.setdefault("name", name) != name:
            raise SchemaProblem((*loc, "name"), f"differs from the table's name {name!r}")
        if entry["name"] in resources:
            raise SchemaProblem((*loc, "name"), f"a resource named {entry['name']!r} is already declared")
        resources[entry["name"]] = entry
    return resources


def validate_document(document: dict[str, Any], base: Path, providers: set[str] | None) -> dict[str, Any]:
    """The file's sections, checked; ``SchemaProblem`` names the first bad key."""
    for key in document:
        if key not in SECTIONS:
            raise SchemaProblem((key,), f"unknown key; expected one of {', '.join(SECTIONS)}")
    defaults = _check(defaults_model(), document.get("defaults", {}), ("defaults",))
    # Whether its provider is known is checked once the files are merged: it may be declared in the other one.
    if (actor := defaults.get("default_actor")) is not None and not re.match(ACTOR_NAME, actor):
        raise SchemaProblem(("defaults", "default_actor"), "an actor's name is provider/model")
    for key in sorted(POSITIVE.intersection(defaults)):
        if not defaults[key] > 0:
            raise SchemaProblem(("defaults", key), "must be more than 0")
    return {
        "defaults": defaults,
        "actors": _actors(document, providers),
        "projects": _projects(document, base),
        "resources": _resources(document),
        "shell": _check(ShellEntry, document.get("shell", {}), ("shell",)),
        "protected": _check(ProtectedEntry, document.get("protected", {}), ("protected",)),
        "oauth2": _oauth2(document, base),
    }
