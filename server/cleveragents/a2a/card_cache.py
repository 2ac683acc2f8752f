"""Agent cards the outbound client read, kept by the URL they were read for, as long as
the card's own ``Cache-Control`` allows: its ``max-age``, at most an hour. A card sent
with ``no-store`` or ``no-cache``, or without a ``max-age``, is not kept.

One cache serves the clients of one card verifier: a card is checked when it is read,
and a client that takes it from the cache trusts that check. A client whose call could
not reach the agent drops the card it used (``A2AClient``), so an agent that moved is
found again at the next call.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

MAX_AGE = 3600.0
MAX_CARDS = 256


def max_age(cache_control: str | None) -> float:
    """How long, in seconds, a card sent with this ``Cache-Control`` may be kept."""
    directives: dict[str, str] = {}
    for part in (cache_control or "").split(","):
        name, _, value = part.partition("=")
        directives[name.strip().lower()] = value.strip().strip('"')
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    age = directives.get("max-age", "")
    return min(float(age), MAX_AGE) if age.isdigit() else 0.0


class CardCache:
    def __init__(self, size: int = MAX_CARDS, clock: Callable[[], float] = time.monotonic):
        self._size, self._clock = size, clock
        self._cards: OrderedDict[str, tuple[float, dict[str, Any], str]] = OrderedDict()

    def get(self, url: str) -> tuple[dict[str, Any], str] | None:
        """(the card, the URL it was read at) kept for ``url``, while it is fresh."""
        entry = self._cards.get(url)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._cards[url]
            return None
        self._cards.move_to_end(url)
        return entry[1], entry[2]

    def put(self, url: str, card: dict[str, Any], card_url: str, age: float) -> None:
        if age <= 0:
            return
        self._cards[url] = (self._clock() + age, card, card_url)
        self._cards.move_to_end(url)
        while len(self._cards) > self._size:
            self._cards.popitem(last=False)

    def drop(self, url: str) -> None:
        self._cards.pop(url, None)
