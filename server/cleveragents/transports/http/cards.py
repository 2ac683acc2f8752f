"""The public agent cards: ``/.well-known/agent-card.json`` (where A2A 1.0 and 0.3.x
clients both look: one card that both accept) and ``/.well-known/agent.json`` (the 0.3.0
drafts' location: the 0.3 card), with ``Cache-Control``, ``ETag`` and
``Last-Modified``, and 304 answers to ``If-None-Match`` / ``If-Modified-Since``; and
the headers of the extended card, which depends on the credential."""

from __future__ import annotations

import hashlib
import json
from email.utils import formatdate, parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from cleveragents.a2a.card_service import BOTH

if TYPE_CHECKING:
    from cleveragents.transports.http.app import A2AHttpApp
    from cleveragents.transports.http.auth import HttpAuth

CARD_V1_PATH = "/.well-known/agent-card.json"
CARD_V03_PATH = "/.well-known/agent.json"
# The public keys that sign the cards, as a JWK Set; the signatures' jku names it.
JWKS_PATH = "/.well-known/jwks.json"
CACHE_CONTROL = "public, max-age=300"
# The extended card is the caller's own: no shared cache keeps it, and a private one
# keeps it per credential.
PRIVATE_CACHE_CONTROL = "private, max-age=300"


def extended_card_headers(auth: HttpAuth) -> dict[str, str]:
    """``Cache-Control`` and ``Vary`` for an extended card served to ``auth``'s callers."""
    vary = ["Authorization", *([auth.api_key_header] if auth.api_keys else [])]
    return {"Cache-Control": PRIVATE_CACHE_CONTROL, "Vary": ", ".join(vary)}


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _not_modified(request: Request, etag: str, modified: float) -> bool:
    if (match := request.headers.get("if-none-match")) is not None:
        candidates = {c.strip().removeprefix("W/") for c in match.split(",")}
        return "*" in candidates or etag in candidates
    if since := request.headers.get("if-modified-since"):
        try:
            return int(modified) <= parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError):
            return False
    return False


class CardRoutes:
    def __init__(self, app: A2AHttpApp):
        self.app = app

    async def card_v1(self, request: Request) -> Response:
        return await self._serve(request, BOTH)

    async def card_v03(self, request: Request) -> Response:
        return await self._serve(request, "0.3")

    async def jwks(self, request: Request) -> Response:
        """The card signing keys' JWK Set; 404 when the cards are not signed."""
        facade = await self.app.facade(request)
        keys = facade.cards.jwks() if facade.cards is not None else None
        if keys is None:
            return Response(status_code=404)
        return self._answer(request, keys)

    async def _serve(self, request: Request, version: str) -> Response:
        facade = await self.app.facade(request)
        cards = facade.cards
        if cards is None:
            return Response(status_code=404)
        return self._answer(request, cards.card(version))

    def _answer(self, request: Request, document: dict[str, Any]) -> Response:
        body = json.dumps(document, separators=(",", ":"), sort_keys=True).encode("utf-8")
        etag = etag_of(body)
        modified = self.app.card_modified
        headers = {"Cache-Control": CACHE_CONTROL, "ETag": etag,
                   "Last-Modified": formatdate(modified, usegmt=True)}
        if _not_modified(request, etag, modified):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)
