"""Resolving and checking a webhook's URL (``domain/push_policy.py`` says which
addresses are refused).

Every address the host resolves to is checked, when a config is created and again at
each delivery; the delivery then connects to exactly the addresses it checked
(``webhooks.py``), so a second DNS answer can't redirect it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from cleveragents.domain.addresses import literal_address
from cleveragents.domain.push_policy import PushPolicy, PushTargetRefused

Resolver = Callable[[str, int], list[str]]
DEFAULT_PORTS = {"http": 80, "https": 443}


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class Target:
    """A checked webhook: where to connect (the addresses), and what to name (host)."""

    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


class PushTargets:
    def __init__(self, allowed: Iterable[str] = (), resolve: Resolver = system_resolver):
        self.policy = PushPolicy(allowed)
        self.resolve = resolve

    def check(self, url: str) -> Target:
        """The URL's target, every address checked (blocking: resolves the host)."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parts.hostname:
            raise PushTargetRefused("scheme", "the URL must be an absolute http or https URL")
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError:
            raise PushTargetRefused("port", "the URL's port is not a number from 1 to 65535") from None
        host = parts.hostname
        literal = literal_address(host)
        try:
            found = [literal] if literal is not None else self.resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise PushTargetRefused("unresolved", f"the host does not resolve ({type(exc).__name__})") from None
        if not found:
            raise PushTargetRefused("unresolved", "the host resolves to no address")
        self.policy.check(found)
        return Target(scheme, host, port, tuple(found))
