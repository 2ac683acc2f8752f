"""The agent cards the outbound client reads: fetched (``fetch_card``), and kept by
the URL they were read for, as long as the card's own ``Cache-Control`` allows: its
``max-age``, at most an hour. A card sent with ``no-store`` or ``no-cache``, or
without a ``max-age``, is not kept.

One cache serves the clients of one card verifier: a card is checked when it is read,
and a client that takes it from the cache trusts that check. A client whose call could
not reach the agent drops the card it used (``A2AClient``), so an agent that moved is
found again at the next call.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cleveragents.a2a.client_dialect import card_urls
from cleveragents.a2a.client_errors import A2AClientHTTPError, http_error
from cleveragents.a2a.client_wire import TransportErrors, parsed, read_bounded
from cleveragents.a2a.errors import InvalidAgentResponseError

if TYPE_CHECKING:
    import httpx

MAX_AGE = 3600.0
MAX_CARDS = 256
_NOT_FOUND = (404, 405, 410)
_METHOD = "GET agent card"


async def fetch_card(http: httpx.AsyncClient, base_url: str, timeout: float) -> tuple[dict[str, Any], str, float]:
    """(the card of the agent at ``base_url``, the URL it was read at, how long it may
    be kept), trying each well-known path in turn under one deadline of ``timeout``."""
    tried: list[str] = []
    ends_at = asyncio.get_running_loop().time() + timeout  # one deadline for every path tried
    for url in card_urls(base_url):
        tried.append(url)
        async with TransportErrors(_METHOD, url, timeout, deadline=True, ends_at=ends_at):
            # The card is public: following a redirect (to https, say) is safe.
            async with http.stream("GET", url, headers={"Accept": "application/json"},
                                   follow_redirects=True) as response:
                status = response.status_code
                body = "" if status in _NOT_FOUND else await read_bounded(response, _METHOD, url)
                age = max_age(response.headers.get("cache-control"))
        if status in _NOT_FOUND:
            continue
        if status >= 400:
            raise http_error(status, url=url, method=_METHOD, body=body)
        card = parsed(body, _METHOD, url)
        if not isinstance(card, dict):
            raise InvalidAgentResponseError(f"the agent card at {url} is not a JSON object", {"url": url})
        return card, url, age
    raise A2AClientHTTPError(f"no agent card at {base_url} (tried {', '.join(tried)})",
                             {"tried": tried}, url=base_url, method=_METHOD, status=404)


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
