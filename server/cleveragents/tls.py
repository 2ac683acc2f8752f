"""The TLS context of outbound HTTPS clients, made once and shared.

Making one loads the whole CA bundle: about 24 ms of CPU, which httpx spends in every
``AsyncClient`` it makes without one, on the event loop. The A2A client and the
OpenAI-compatible actor make a client per turn, so they take this one instead. It is
httpx's own default context: it trusts ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set,
else certifi's bundle, and a change to either variable gets a context of its own.
"""

from __future__ import annotations

import functools
import os
import ssl


def client_context() -> ssl.SSLContext:
    return _context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


@functools.lru_cache(maxsize=4)
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """The context for these values of the two variables (the arguments are the key:
    httpx reads the variables itself)."""
    import httpx

    return httpx.create_ssl_context()
