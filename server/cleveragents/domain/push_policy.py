"""Which addresses push notifications may reach: public ones only, unless the config
allows a network.

A webhook URL comes from a remote caller, so it could make the server post into the
machine's own loopback services, the private network or a cloud metadata service
(server-side request forgery). An address is refused if it is loopback, private,
link-local, multicast, reserved, unspecified, shared (CGNAT) or otherwise not
global, or a known metadata address, unless one of the allowed networks holds it (a
metadata address only by a network that names it alone). Resolving names and
connecting is ``infra/push_targets.py`` and ``infra/webhooks.py``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from cleveragents.domain.addresses import METADATA, Address, read_address
from cleveragents.domain.errors import ValidationError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class PushTargetRefused(ValidationError):
    """A webhook URL the server won't call; ``data`` says why (``reason``)."""

    def __init__(self, reason: str, detail: str, address: str | None = None, loc: tuple[str, ...] = ("url",)):
        self.reason, self.detail, self.address = reason, detail, address
        extra = {"reason": reason} | ({"address": address} if address else {})
        error = ValidationError.for_field(loc, detail, "push_url_not_allowed")
        super().__init__("Invalid params: the push notification URL is not allowed", {**error.data, **extra})

    def at(self, loc: tuple[str | int, ...]) -> PushTargetRefused:
        """The same refusal, for the field at ``loc`` of the request."""
        return PushTargetRefused(self.reason, self.detail, self.address, tuple(str(p) for p in loc))


class PushPolicy:
    def __init__(self, allowed: Iterable[str] = ()):
        self.allowed: tuple[Network, ...] = tuple(_network(n) for n in allowed if n and n.strip())

    def refusal(self, address: Address) -> str | None:
        """Why ``address`` (as ``read_address`` reads it) is refused (a reason word), or None."""
        if address in METADATA:
            exact = any(address in n and n.num_addresses == 1 for n in self.allowed)
            return None if exact else "metadata"
        if any(address in n for n in self.allowed):
            return None
        for reason, test in (("loopback", address.is_loopback), ("unspecified", address.is_unspecified),
                             ("link_local", address.is_link_local), ("multicast", address.is_multicast),
                             ("private", address.is_private), ("reserved", address.is_reserved)):
            if test:
                return reason
        return None if address.is_global else "not_global"

    def check(self, addresses: Iterable[str]) -> None:
        """Refuse if any of ``addresses`` is refused."""
        for text in addresses:
            address = read_address(text)
            if (reason := self.refusal(address)) is not None:
                raise PushTargetRefused(reason, f"the host resolves to {address}, a {reason.replace('_', '-')} "
                                                "address (allow its network with --push-allow-network)", str(address))


def _network(text: str) -> Network:
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"push_allowed_networks: {text.strip()!r} is not a network (e.g. 10.0.0.0/8, ::1)") from None
