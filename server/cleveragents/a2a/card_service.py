"""AgentCardService: the agent cards this backend serves, public and extended.

The card describes either the backend itself (the CleverAgents tools and the
extension methods) or an agent published with ``cleveragents.A2A``. The extended
card adds what only authenticated callers see, and the publisher's
``extended_agent_card_callback`` may change it further.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from cleveragents._version import __version__
from cleveragents.a2a import dialects, methods
from cleveragents.a2a.capabilities import AGENT_DESCRIPTION, AGENT_NAME, EXTENSION_URI
from cleveragents.a2a.cards import AgentCardSpec, ExtensionSpec, SkillSpec, card_both, card_v03, card_v1
from cleveragents.a2a.errors import ExtendedAgentCardNotConfiguredError
from cleveragents.a2a.extensions import ExtensionSet
from cleveragents.app.calls import CallContext

if TYPE_CHECKING:
    from cleveragents.a2a.card_signing import CardSigner
    from cleveragents.app.registry import ToolRegistry

logger = logging.getLogger(__name__)

DEFAULT_URL = "http://localhost:8000/a2a"
BOTH = "both"  # the public card that 1.0 and 0.3 clients both read
CardCallback = Callable[[dict[str, Any]], Any]


class CardSource(Protocol):
    """What describes a published agent (``cleveragents.A2A``); it may also have an
    ``extended_agent_card_callback``."""

    def card_spec(self) -> AgentCardSpec: ...


def backend_extension() -> ExtensionSpec:
    return ExtensionSpec(EXTENSION_URI, "CleverAgents platform methods (plans, registries, context)", False,
                         {"methods": methods.extension_method_names()})


class AgentCardService:
    def __init__(self, spec: AgentCardSpec, callback: CardCallback | None = None,
                 signer: CardSigner | None = None):
        self.spec = spec
        self.callback = callback
        # Signs the 1.0 cards (public and extended); the 0.3 card carries no signature.
        self.signer = signer
        # What requests may activate (and must, when required); binding never changes it.
        self.extensions = ExtensionSet(spec.extensions)

    @classmethod
    def for_backend(cls, source: CardSource | None, tools: ToolRegistry,
                    signer: CardSigner | None = None) -> AgentCardService:
        """The card of a published agent (``source.card_spec()``, signed with its own
        ``card_signer()`` when it has one), else the backend's; ``signer`` signs either
        when the source has none."""
        if source is not None:
            spec = source.card_spec()
            if EXTENSION_URI not in {e.uri for e in spec.extensions}:
                spec = _with_extension(spec)
            own = getattr(source, "card_signer", None)
            return cls(spec, getattr(source, "extended_agent_card_callback", None), (own() if own else None) or signer)
        skills = tuple(
            SkillSpec(t["name"], t["name"], t["description"], ("tool", t["namespace"]))
            for t in tools.list_tools()["tools"]
        )
        spec = AgentCardSpec(AGENT_NAME, AGENT_DESCRIPTION, __version__, DEFAULT_URL, skills=skills,
                             push_notifications=True, extended_card=True, extensions=(backend_extension(),))
        return cls(spec, signer=signer)

    def bind(self, url: str | None = None, *, bearer: bool | None = None,
             api_key_header: str | None = None) -> None:
        """Say where the agent is served and how callers authenticate (HTTP mode)."""
        from dataclasses import replace

        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = url
        if bearer:
            changes["bearer"] = True
        if api_key_header:
            changes["api_key_header"] = api_key_header
        if changes.get("bearer") or changes.get("api_key_header"):
            changes["extended_card"] = True  # something is now behind authentication
        self.spec = replace(self.spec, **changes)

    def card(self, version: str = "1.0", extended: bool = False) -> dict[str, Any]:
        """The card in A2A ``version`` ("1.0" or "0.3"), or the public card both read
        (``BOTH``)."""
        if version == BOTH:
            return self._signed(card_both(self.spec))
        if version.startswith("0.3"):
            return card_v03(self.spec, extended=extended)
        return self._signed(card_v1(self.spec, extended=extended))

    def _signed(self, card: dict[str, Any]) -> dict[str, Any]:
        return self.signer.sign(card) if self.signer is not None else card

    async def extended_card(self, context: CallContext | None = None, **_: Any) -> dict[str, Any]:
        if not self.spec.extended_card:
            raise ExtendedAgentCardNotConfiguredError()
        version = "0.3" if context is not None and context.dialect == dialects.A2A_V03 else "1.0"
        card = self.card(version, extended=True)
        if self.callback is not None:
            changed = self.callback(card)
            if inspect.isawaitable(changed):
                changed = await changed
            if isinstance(changed, dict):
                card = changed
            if version == "1.0":  # what the callback changed is signed, not the card before it
                card = self._signed({k: v for k, v in card.items() if k != "signatures"})
        return card


def _with_extension(spec: AgentCardSpec) -> AgentCardSpec:
    from dataclasses import replace

    return replace(spec, extensions=(*spec.extensions, backend_extension()))
