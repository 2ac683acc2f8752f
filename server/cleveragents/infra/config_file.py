'''The configuration file: ``.cleveragents/config.toml`` in the workspace and a
user-level ``config.toml``; the workspace's file overrides the user's.

::

    [defaults]
    default_actor = "openai/gpt-4o"

    [actors."openai/gpt-4o"]          # provider and model come from the name ...
    base_url = "http://127.0.0.1:11434/v1"

    [actors."team/reviewer"]          # ... or are given
    provider = "openai"
    model = "gpt-4o-mini"

    [projects.api]
    path = "../api"

    [[resources]]                     # or [resources.docs]
    name = "docs"
    type_name = "repository"
    uri = "https://example.invalid/docs.git"

Actors and ``[defaults]`` merge key by key (the workspace's keys win); projects and
resources are replaced whole, by name, and so is the ``[oauth2]`` table (HTTP mode).
A bad file raises ``ConfigError``, whose message is one line naming the file, the
line and the key. Reading imports nothing
heavy unless a file exists (the stdio server checks the files before it starts).
'''

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleveragents.config import STATE_DIRNAME
from cleveragents.domain.errors import ValidationError

CONFIG_NAME = "config.toml"
# Points at the user-level file instead of $XDG_CONFIG_HOME/cleveragents/config.toml.
USER_CONFIG_ENV = "CLEVERAGENTS_USER_CONFIG"
_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class ConfigError(ValidationError):
    """A bad configuration file; ``data`` is ``{file, line?, column?, key?}``."""

    default_message = "Invalid configuration"


def workspace_config_path(workspace: Path) -> Path:
    return workspace / STATE_DIRNAME / CONFIG_NAME


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if value := env.get(USER_CONFIG_ENV):
        return Path(value).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "cleveragents" / CONFIG_NAME


# --- where a key is defined --------------------------------------------------------
def format_key(loc: Iterable[str | int]) -> str:
    """``["actors", "openai/gpt-4o", "model"]`` -> ``actors."openai/gpt-4o".model``;
    list positions as ``[0]``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        name = part if _BARE_KEY.fullmatch(part) else json.dumps(part)
        text += f".{name}" if text else name
    return text


def _split_key(text: str) -> list[str] | None:
    """The parts of a TOML dotted key (``a."b.c".d``); ``None`` if it isn't one."""
    parts, rest = [], text.strip()
    while rest:
        if rest[0] in "\"'":
            quote = rest[0]
            end = rest.find(quote, 1)
            while quote == '"' and end > 0 and rest[end - 1] == "\\":
                end = rest.find(quote, end + 1)
            if end < 0:
                return None
            raw = rest[1:end]
            parts.append(json.loads(f'"{raw}"') if quote == '"' else raw)
            rest = rest[end + 1:].lstrip()
        elif match := _BARE_KEY.match(rest):
            parts.append(match.group())
            rest = rest[match.end():].lstrip()
        else:
            return None
        if rest and not rest.startswith("."):
            return None
        rest = rest[1:].lstrip()
    return parts or None


def _key_before_equals(line: str) -> str | None:
    """The text before the first ``=`` that is outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "=":
            return line[:index]
        elif char == "#":
            return None
    return None


def definitions(text: str) -> list[tuple[int, list[str | int]]]:
    """Each table header and key assignment in ``text``: its line and its full key
    path (``[[array]]`` tables are numbered from 0, like the parsed document)."""
    found: list[tuple[int, list[str | int]]] = []
    table: list[str | int] = []
    counts: dict[tuple[str, ...], int] = {}
    in_string = None
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string:
            if line.count(in_string) % 2:
                in_string = None
            continue
        stripped = line.strip()
        if stripped.startswith("["):
            is_array = stripped.startswith("[[")
            header = stripped[2 if is_array else 1:].split("]", 1)[0] if "]" in stripped else ""
            parts = _split_key(header)
            if parts is None:
                continue
            table = list(parts)
            if is_array:
                index = counts.get(tuple(parts), -1) + 1
                counts[tuple(parts)] = index
                table.append(index)
            found.append((number, list(table)))
            continue
        key = _key_before_equals(line)
        parts = _split_key(key) if key is not None else None
        if parts is None:
            continue
        found.append((number, [*table, *parts]))
        for quotes in ('"""', "'''"):
            if line.count(quotes) % 2:
                in_string = quotes
    return found


def line_of(text: str, loc: list[str | int]) -> int | None:
    """The line defining ``loc``: the key itself, else the closest enclosing table or key."""
    best, best_len = None, 0
    for number, path in definitions(text):
        if path == loc:
            return number
        shared = len(path) if loc[:len(path)] == path else 0
        if shared > best_len:
            best, best_len = number, shared
    return best


# --- reading and merging -----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One file's validated content; entries carry ``source`` (the file)."""

    path: Path | None = None
    actors: dict[str, dict[str, Any]] = field(default_factory=dict)
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    shell: dict[str, Any] = field(default_factory=dict)
    protected_paths: tuple[str, ...] = ()
    oauth2: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Configuration:
    """The files merged: the workspace's over the user's."""

    files: tuple[Path, ...] = ()
    actors: dict[str, dict[str, Any]] = field(default_factory=dict)
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    shell: dict[str, Any] = field(default_factory=dict)
    # The user's patterns, then the workspace's: a later one wins, as in a .gitignore.
    protected_paths: tuple[str, ...] = ()
    # HTTP mode's OAuth2 (``cleveragents.config.OAuth2``'s fields); a file's table replaces the other's whole.
    oauth2: dict[str, Any] = field(default_factory=dict)

    def tool_settings(self) -> dict[str, Any]:
        """What the tools read from the configuration (``shell_allow``, ``shell_env``,
        ``shell_sandbox``, ``shell_network``, ``shell_read``)."""
        return {f"shell_{key}": value for key, value in self.shell.items()}

    def declared_actors(self) -> dict[str, dict[str, Any]]:
        """What an actor resolver gets as ``declared``: the settings of each actor."""
        return {name: {k: v for k, v in entry.items() if k != "source"} for name, entry in self.actors.items()}


def read_config_file(path: Path, base: Path, providers: Iterable[str] | None = None) -> ConfigFile:
    """One file; relative project paths are resolved against ``base``. ``ConfigError`` if bad."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8", {"file": str(path)}) from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}", {"file": str(path)}) from None
    import tomllib

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        position = _TOML_POSITION.search(str(exc))
        line, column = (int(position.group(1)), int(position.group(2))) if position else (text.count("\n") + 1, 1)
        reason = _TOML_POSITION.sub("", str(exc)).strip()
        raise ConfigError(f"{path}:{line}: {reason}",
                          {"file": str(path), "line": line, "column": column}) from None
    except RecursionError:
        document = None
    from cleveragents.domain.json_limits import MAX_DEPTH, first_too_deep

    if document is None or first_too_deep(document, MAX_DEPTH) is not None:
        # The registries serve what the file declares (an actor's extra_body, say).
        raise ConfigError(f"{path}: arrays or tables nest deeper than {MAX_DEPTH} levels", {"file": str(path)})
    from cleveragents.infra.config_schema import SchemaProblem, validate_document

    try:
        content = validate_document(document, base, set(providers) if providers is not None else None)
    except SchemaProblem as problem:
        key = format_key(problem.loc)
        defined_at = line_of(text, list(problem.loc))
        where = f"{path}:{defined_at}" if defined_at else str(path)
        data: dict[str, Any] = {"file": str(path), "key": key}
        if defined_at:
            data["line"] = defined_at
        raise ConfigError(f"{where}: {key}: {problem.message}", data) from None
    source = str(path)
    return ConfigFile(
        path,
        {name: {**entry, "source": source} for name, entry in content["actors"].items()},
        {name: {**entry, "source": source} for name, entry in content["projects"].items()},
        {name: {**entry, "source": source} for name, entry in content["resources"].items()},
        content["defaults"],
        content["shell"],
        tuple(content["protected"].get("paths", ())),
        content["oauth2"],
    )


def merge(*files: ConfigFile) -> Configuration:
    """Later files win: actors, defaults and the shell policy key by key, projects and
    resources whole."""
    actors: dict[str, dict[str, Any]] = {}
    projects: dict[str, dict[str, Any]] = {}
    resources: dict[str, dict[str, Any]] = {}
    defaults: dict[str, Any] = {}
    shell: dict[str, Any] = {}
    protected: list[str] = []
    oauth2: dict[str, Any] = {}
    for file in files:
        for name, entry in file.actors.items():
            actors[name] = {**actors.get(name, {}), **entry}
        projects.update(file.projects)
        resources.update(file.resources)
        defaults.update(file.defaults)
        shell.update(file.shell)
        protected.extend(file.protected_paths)
        oauth2 = file.oauth2 or oauth2
    return Configuration(tuple(f.path for f in files if f.path is not None), actors, projects, resources, defaults,
                         shell, tuple(protected), oauth2)


def load_config(workspace: Path, providers: Iterable[str] | None = None,
                environ: Mapping[str, str] | None = None) -> Configuration:
    """The user's file, then the workspace's; a missing file is an empty one.
    ``providers`` are the actor providers an actor may name (unchecked if ``None``)."""
    known = list(providers) if providers is not None else None
    files = []
    user = user_config_path(environ)
    if user.is_file():
        files.append(read_config_file(user, Path.home(), known))
    local = workspace_config_path(workspace)
    if local.is_file():
        files.append(read_config_file(local, workspace, known))
    merged = merge(*files)
    if known is not None:
        _check_default_actor(files, merged, known)
    return merged


def _check_default_actor(files: list[ConfigFile], merged: Configuration, providers: list[str]) -> None:
    """The default actor is declared (in either file) or names a known provider."""
    actor = merged.defaults.get("default_actor")
    if actor is None or actor in merged.actors or actor.partition("/")[0] in providers:
        return
    path = next(f.path for f in reversed(files) if f.defaults.get("default_actor") == actor and f.path is not None)
    loc: list[str | int] = ["defaults", "default_actor"]
    line = line_of(path.read_text(encoding="utf-8"), loc)
    raise ConfigError(f"{path}:{line}: defaults.default_actor: {actor!r} is not declared and its provider is unknown; "
                      f"known: {', '.join(sorted(providers))}", {"file": str(path), "key": format_key(loc), "line": line})
