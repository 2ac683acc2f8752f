"""IP addresses as the rules about where the server connects read them.

A host may name an address literally, with an IPv6 zone (``fe80::1%eth0``), and an
IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) reaches the IPv4 address it carries:
every rule reads it as that address, so the mapped spelling can't pass for another.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud instance metadata services (AWS, GCP, Azure, OpenStack, Oracle, Alibaba, ...).
METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "169.254.169.123", "169.254.169.250", "169.254.169.251",
    "100.100.100.200", "192.0.0.192", "fd00:ec2::254", "fd00:ec2::23"))


def read_address(text: str) -> Address:
    """``text`` as an address, its zone dropped and an IPv4-mapped one read as IPv4;
    ``ValueError`` when it is not an address."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def literal_address(host: str) -> str | None:
    """The address ``host`` names literally, as text (``read_address``); None for a
    name, which must be resolved."""
    try:
        return str(read_address(host))
    except ValueError:
        return None
