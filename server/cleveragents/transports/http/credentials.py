"""Who may call a server that this process listens with: ``agents serve --http`` and
``A2A(...).serve()``.

With no token or API key configured, a random token is made for the run and printed
once on stderr (as Jupyter does), so the server is never open to whoever can reach
its port, other local users included. ``no_auth`` serves without a credential, but
only on a loopback address; a non-loopback address is never served without one.
"""

from __future__ import annotations

import dataclasses
import secrets

from cleveragents.config import Settings
from cleveragents.transports.http.guards import is_loopback_host

TOKEN_BYTES = 32


class ServeRefused(ValueError):
    """A combination of options that would serve unsafely; the message is one line."""


def has_credential(settings: Settings, extra_tokens: tuple[str | None, ...] = ()) -> bool:
    """Whether a token, an API key or OAuth2 (in the settings or the configuration files) is configured."""
    from cleveragents.container.configured import configured_oauth2

    return any(t and t.strip() for t in (*settings.auth_tokens, *settings.api_keys, *extra_tokens)) \
        or configured_oauth2(settings) is not None


def credentials_for_serving(settings: Settings, host: str, *, no_auth: bool = False,
                            extra_tokens: tuple[str | None, ...] = ()) -> tuple[Settings, str | None]:
    """The settings to serve ``host`` with, and the token made for this run (if any).
    ``extra_tokens``: tokens given outside the settings (``A2A(auth_token=...)``)."""
    configured = has_credential(settings, extra_tokens)
    if no_auth:
        if configured:
            raise ServeRefused("--no-auth contradicts the configured auth tokens, API keys or OAuth2: "
                               "drop one or the other")
        if not is_loopback_host(host):
            raise ServeRefused(f"refusing to serve {host} without auth: --no-auth is for loopback addresses only "
                               "(use --host 127.0.0.1, or drop --no-auth)")
        return settings, None
    if configured:
        return settings, None
    # Hex, not base64url: a token starting with "-" would be taken for an option by
    # the `--token <token>` the notice suggests.
    token = secrets.token_hex(TOKEN_BYTES)
    return dataclasses.replace(settings, auth_tokens=(token,)), token


def token_notice(token: str, url: str) -> str:
    """What the server prints once, before ``listening on``: the token and how to use it."""
    return (
        "No auth token or API key is configured, so this run made a token. Send it with every call:\n"
        f'  "Authorization: Bearer <token>", or `agents <command> --server {url} --token <token>`.\n'
        "  Choose your own with --auth-token or CLEVERAGENTS_AUTH_TOKENS; --no-auth serves loopback without auth.\n"
        f"    token: {token}\n"
    )
