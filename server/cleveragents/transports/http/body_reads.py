"""How many request bodies one caller may be sending at once.

A body is read before its call runs, for up to ``--body-timeout``, and a connection
whose body is being read is being served: the connection limit never makes room from
it (``connections.py``). So a caller with a credential that sent bodies slowly, one per
connection, could hold every connection there is. Each holder (an access token's
issuer and subject; every caller with a configured secret, or no auth, is one holder)
may be sending ``MAX_BODY_READS`` bodies at once. Past that, a request is refused with
429 before its body is read, and its connection is closed: with a body unread, it can't
carry another request, and left open it would stay a request being served.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Hashable, Iterator

from cleveragents.a2a.errors import BusinessRuleViolation
from cleveragents.transports.http.auth import Caller, Refusal

MAX_BODY_READS = 32
RETRY_AFTER_SECONDS = "1"


class TooManyBodies(Exception):
    """The caller is sending as many bodies as it may (``refusal`` is the answer)."""

    def __init__(self, most: int):
        error = BusinessRuleViolation(
            f"Too many requests sending their bodies at once: at most {most} per caller; "
            "finish one or wait", {"limit": most, "scope": "caller", "reason": "too_many_bodies"})
        self.refusal = Refusal(429, error, {"Retry-After": RETRY_AFTER_SECONDS, "Connection": "close"})
        super().__init__(error.message)


class BodyReads:
    def __init__(self, most: int = MAX_BODY_READS):
        self.most = most
        self._reading: Counter[Hashable] = Counter()

    @contextlib.contextmanager
    def reading(self, caller: Caller) -> Iterator[None]:
        """Around reading one body of ``caller``'s; ``TooManyBodies`` past its share."""
        holder = caller.identity.holder if caller.identity is not None else None
        if self._reading[holder] >= self.most:
            raise TooManyBodies(self.most)
        self._reading[holder] += 1
        try:
            yield
        finally:
            self._reading[holder] -= 1
            if not self._reading[holder]:
                del self._reading[holder]
