"""OAuth2 for ``agents serve --http`` from its flags and ``CLEVERAGENTS_OAUTH2_*``.

Each flag and variable sets one field of ``cleveragents.config.OAuth2``. A flag wins
over its variable, and either over the same key of the configuration files'
``[oauth2]`` table, whose other keys stay: a deployment can keep the table in the
file and change the keys' location, say, in its environment (``jwks_url`` given here
replaces the file's ``jwks_file``, and the other way round). Nothing given leaves
OAuth2 to the files.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cleveragents.config import OAuth2ConfigError, Settings

ENV_PREFIX = "CLEVERAGENTS_OAUTH2_"
# field -> (metavar, help): one value each.
_TEXT = {
    "issuer": ("ISS", "the iss every access token must carry"),
    "jwks_url": ("URL", "where the authorization server's signing keys are (https; http on loopback only)"),
    "jwks_file": ("FILE", "or a JWKS file holding them"),
    "token_url": ("URL", "where the card tells clients to get tokens (required with OAuth2)"),
    "authorization_url": ("URL", "the card declares the authorization code flow"),
    "device_authorization_url": ("URL", "the card declares the device code flow"),
    "refresh_url": ("URL", "the flow's refresh URL, on the card"),
    "metadata_url": ("URL", "the authorization server's metadata (RFC 8414), on the card"),
}
_NUMBERS = {
    "leeway": ("SECONDS", "clock skew allowed on exp, nbf and iat (default 30)"),
    "jwks_cache_seconds": ("SECONDS", "how long the keys are kept before they are read again (default 300)"),
}
# field -> (flag's dest, metavar, help): repeatable flags, comma-separated variables.
_LISTS = {
    "audience": ("oauth2_audience", "AUD", "an aud the token must name (any one); repeat for several"),
    "algorithms": ("oauth2_algorithm", "ALG", "an accepted signing algorithm; repeat for several (default: all "
                                             "the asymmetric ones)"),
}
# Keys of which a configuration has one: where the keys are, and the card's flow.
_EITHER = (("jwks_url", "jwks_file"), ("authorization_url", "device_authorization_url"))
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def flag(key: str) -> str:
    return "--oauth2-" + key.replace("_", "-")


def variable(key: str) -> str:
    return ENV_PREFIX + key.upper()


def add_oauth2_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "OAuth2", f"JWT access tokens (docs/http.md); each flag has a {ENV_PREFIX}* variable and wins over it, "
                  "and either over the same key of the configuration file's [oauth2] table")
    group.add_argument(flag("issuer"), dest="oauth2_issuer", metavar="ISS",
                       help=f"{_TEXT['issuer'][1]} (env {variable('issuer')})")
    for key, (dest, metavar, text) in _LISTS.items():
        group.add_argument(flag(dest.removeprefix("oauth2_")), dest=dest, action="append", metavar=metavar,
                           help=f"{text} (env {variable(key)}, comma-separated)")
    for key, (metavar, text) in _TEXT.items():
        if key != "issuer":
            group.add_argument(flag(key), dest=f"oauth2_{key}", metavar=metavar, help=f"{text} (env {variable(key)})")
    group.add_argument(flag("scope"), dest="oauth2_scope", action="append", metavar="SCOPE=GRANT[,GRANT]",
                       help="what a scope grants: groups (read, send, admin) or method patterns, e.g. "
                            "agents:send=read,send; repeat for several (env " + variable("scopes") +
                            ", the same separated by ';')")
    for key, (metavar, text) in _NUMBERS.items():
        group.add_argument(flag(key), dest=f"oauth2_{key}", type=float, metavar=metavar,
                           help=f"{text} (env {variable(key)})")
    group.add_argument(flag("accept_plain_jwt"), dest="oauth2_accept_plain_jwt", action="store_true", default=None,
                       help="also accept tokens typed JWT or untyped, not only at+jwt (RFC 9068) "
                            f"(env {variable('accept_plain_jwt')}=true)")


def oauth2_overrides(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The OAuth2 fields the flags and the environment give (a flag wins over its
    variable); ``ValueError`` names the flag or variable with a bad value."""
    environ = os.environ if environ is None else environ
    found: dict[str, Any] = {}
    for key in (*_TEXT, *_NUMBERS, *_LISTS, "scopes", "accept_plain_jwt"):
        if (value := environ.get(variable(key), "").strip()):
            found[key] = _from_env(key, value)
    for key in (*_TEXT, *_NUMBERS, "accept_plain_jwt"):
        if (given := getattr(args, f"oauth2_{key}", None)) is not None:
            found[key] = given
    for key, (dest, _, _) in _LISTS.items():
        if values := getattr(args, dest, None):
            found[key] = tuple(values)
    if scopes := getattr(args, "oauth2_scope", None):
        found["scopes"] = _scopes(scopes, flag("scope"))
    if "jwks_file" in found:  # relative to where the command runs, as any path on a command line
        found["jwks_file"] = str(Path(found["jwks_file"]).expanduser().resolve())
    return found


def _from_env(key: str, value: str) -> Any:
    name = variable(key)
    if key in _NUMBERS:
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{name} must be a number of seconds, not {value!r}") from None
    if key in _LISTS:
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if key == "scopes":
        return _scopes([s for s in value.split(";") if s.strip()], name)
    if key == "accept_plain_jwt":
        if value.lower() not in TRUE | FALSE:
            raise ValueError(f"{name} is true or false, not {value!r}")
        return value.lower() in TRUE
    return value


def _scopes(entries: list[str], where: str) -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for entry in entries:
        scope, sep, grants = entry.partition("=")
        if not sep or not scope.strip():
            raise ValueError(f"{where}: {entry.strip()!r} is not SCOPE=GRANT[,GRANT] (e.g. agents:send=read,send)")
        table[scope.strip()] = tuple(g.strip() for g in grants.split(",") if g.strip())
    return table


def with_oauth2_options(settings: Settings, args: argparse.Namespace,
                        environ: Mapping[str, str] | None = None) -> Settings:
    """``settings`` with the OAuth2 the flags, the environment and the files give
    together; unchanged when neither flags nor variables give any. ``ValueError``
    (one line, naming the flag and the variable) for a bad or missing field."""
    overrides = oauth2_overrides(args, environ)
    if not overrides:
        return settings
    from cleveragents.config import OAuth2
    from cleveragents.container.configured import oauth2_file_table

    base = oauth2_file_table(settings) if settings.oauth2 is None else _fields(settings.oauth2)
    for pair in _EITHER:  # one of a pair given here replaces the other one in the files
        for key in pair:
            if key in overrides:
                base.pop(pair[0] if key == pair[1] else pair[1], None)
    try:
        oauth2 = OAuth2(**{**base, **overrides})
    except OAuth2ConfigError as exc:
        key = exc.loc[0]
        raise ValueError(f"{exc} ({flag('scope') if key == 'scopes' else flag(key)} or {variable(key)})") from None
    except TypeError as exc:  # no issuer or audience at all
        missing = "issuer" if "issuer" not in {**base, **overrides} else "audience"
        raise ValueError(f"oauth2.{missing}: required ({flag(missing)} or {variable(missing)}): {exc}") from None
    return dataclasses.replace(settings, oauth2=oauth2)


def _fields(oauth2: Any) -> dict[str, Any]:
    return {f.name: getattr(oauth2, f.name) for f in dataclasses.fields(oauth2)}
