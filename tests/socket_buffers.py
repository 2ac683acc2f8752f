"""How much a writer may get ahead of a reader that stopped, on one TCP connection.

A test that sends a reader an endless answer counts the bytes it wrote; those the
kernel holds (the writer's send buffer, the reader's receive buffer) were never read.
Both grow up to the ``tcp_wmem`` and ``tcp_rmem`` maximums (10 MiB together on a
default kernel, 36 MiB on some machines), so a bound on what a reader read allows that
much beside its limit.
"""

from __future__ import annotations

from pathlib import Path


def _most(name: str) -> int:
    return int(Path(f"/proc/sys/net/ipv4/{name}").read_text().split()[2])


def in_flight_bytes() -> int:
    """The most a writer can have written that its reader never read."""
    return _most("tcp_wmem") + _most("tcp_rmem")
