"""Secrets never reach a log line: the server's log handler formats each record, then
redacts it.

Redacted: the values of ``Authorization``-like headers (bearer and basic credentials,
API key, cookie and push token headers) however they are printed; the values of
token-like URL query parameters (``token``, ``access_token``, ``api_key``, ``sig``,
...), which uvicorn's access log would otherwise print whole; and every secret the
server was configured with (``register``), wherever it appears. This runs only for
records that are emitted, after the level check, so it costs nothing at the default
level.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable

REDACTED = "[redacted]"
MIN_REGISTERED_LENGTH = 8  # shorter values would redact ordinary words; such secrets are weak anyway

# A query parameter whose name says it holds a secret; its value runs to the next separator.
_QUERY = (r"(?i)([?&;][\w.\-\[\]]*(?:token|key|secret|passw|pwd|sig|auth|credential|session|code)[\w.\-\[\]]*=)"
          r"[^&;#\s\"'<>]*")
# ``Authorization: Bearer x``, ``'x-api-key': 'x'``, ``(b'cookie', b'x')``, ``api_key=x``.
_HEADER = (r"(?i)((?:proxy-)?authorization|x-api-key|api[-_]?key|cookie|set-cookie|x-a2a-notification-token)"
           r"(['\"]?\s*[:=,]\s*(?:b(?=['\"]))?['\"]?)(?:(?:bearer|basic|token|apikey)\s+)?[^\s'\",;)}\]]+")
# A credential scheme followed by its value, wherever it is.
_SCHEME = r"(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    # Compiled at the first line logged, not at import: the stdio server sets up its
    # logging before its first answer, and these take milliseconds to compile.
    return re.compile(_QUERY), re.compile(_HEADER), re.compile(_SCHEME)

_registered: set[str] = set()
_registered_pattern: re.Pattern[str] | None = None


def register(secrets: Iterable[str | None]) -> None:
    """Redact these values (tokens, API keys) from every later log line."""
    global _registered_pattern
    added = {s.strip() for s in secrets if s and len(s.strip()) >= MIN_REGISTERED_LENGTH}
    if not added - _registered:
        return
    _registered.update(added)
    # Longest first, so a secret that contains another is redacted whole.
    _registered_pattern = re.compile("|".join(re.escape(s) for s in sorted(_registered, key=len, reverse=True)))


_SECRET_VARIABLE = re.compile(r"(?i)(token|key|secret|passw|credential)s?$|secret|password")


def register_environment(environ: dict[str, str]) -> None:
    """Redact the values of the variables whose names say they hold secrets
    (``*_TOKEN(S)``, ``*_KEY(S)``, ``*SECRET*``, ...): API keys the actors read, the
    outbound A2A token, the server's own tokens. Lists are comma-separated."""
    register(part for name, value in environ.items() if _SECRET_VARIABLE.search(name)
             for part in value.split(","))


def redact(text: str) -> str:
    if _registered_pattern is not None:
        text = _registered_pattern.sub(REDACTED, text)
    query, header, scheme = _patterns()
    text = query.sub(lambda m: m.group(1) + REDACTED, text)
    text = header.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    return scheme.sub(lambda m: m.group(1) + " " + REDACTED, text)


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
