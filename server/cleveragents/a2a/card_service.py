"""AgentCardService: the agent cards this backend serves, public and extended.

The card describes either the backend itself (its skills and the extension methods)
or an agent published with ``cleveragents.A2A``. The extended card, for authenticated
callers, adds the skills kept off the public card and, in our extension's ``params``,
every method name, the actors and the limits; then the publisher's
``extended_agent_card_callback`` may change it further. The card also decides which
methods the agent offers: those needing a capability it turns off are refused.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from cleveragents._version import __version__
from cleveragents.a2a import dialects, methods
from cleveragents.a2a.capabilities import (
    AGENT_DESCRIPTION,
    AGENT_NAME,
    BACKEND_SKILLS,
    EXTENSION_URI,
    backend_extension,
    method_names,
)
from cleveragents.a2a.cards import AgentCardSpec, SkillSpec, card_both, card_v03, card_v1
from cleveragents.a2a.errors import (
    ExtendedAgentCardNotConfiguredError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)
from cleveragents.a2a.extensions import ExtensionSet
from cleveragents.app.calls import CallContext

if TYPE_CHECKING:
    from cleveragents.a2a.card_oauth2 import OAuth2Scheme
    from cleveragents.a2a.card_signing import CardSigner
    from cleveragents.app.registry import ToolRegistry

logger = logging.getLogger(__name__)

DEFAULT_URL = "http://localhost:8000/a2a"
BOTH = "both"  # the public card that 1.0 and 0.3 clients both read
CardCallback = Callable[[dict[str, Any]], Any]
# What the extended card adds to our extension's params (the actors, the limits).
CardDetails = Callable[[], Mapping[str, Any]]


class CardSource(Protocol):
    """What describes a published agent (``cleveragents.A2A``); it may also have an
    ``extended_agent_card_callback``."""

    def card_spec(self) -> AgentCardSpec: ...


class AgentCardService:
    def __init__(self, spec: AgentCardSpec, callback: CardCallback | None = None,
                 details: CardDetails | None = None, signer: CardSigner | None = None):
        self.spec = spec
        self.callback = callback
        self.details = details
        # Signs the cards, 1.0 and 0.3, public and extended.
        self.signer = signer
        # What requests may activate (and must, when required); binding never changes it.
        self.extensions = ExtensionSet(spec.extensions)

    @classmethod
    def for_backend(cls, source: CardSource | None, tools: ToolRegistry,
                    details: CardDetails | None = None, signer: CardSigner | None = None) -> AgentCardService:
        """The card of a published agent (``source.card_spec()``, signed with its own
        ``card_signer()`` when it has one), else the backend's: its skills on the public
        card, its tools as skills on the extended one; ``signer`` signs either when the
        source has none."""
        if source is not None:
            spec = source.card_spec()
            if EXTENSION_URI not in {e.uri for e in spec.extensions}:
                spec = replace(spec, extensions=(*spec.extensions, backend_extension()))
            own = getattr(source, "card_signer", None)
            return cls(spec, getattr(source, "extended_agent_card_callback", None), details,
                       (own() if own else None) or signer)
        tool_skills = tuple(
            SkillSpec(t["name"], t["name"], t["description"], ("tool", t["namespace"]))
            for t in tools.list_tools()["tools"]
        )
        spec = AgentCardSpec(AGENT_NAME, AGENT_DESCRIPTION, __version__, DEFAULT_URL, skills=BACKEND_SKILLS,
                             extended_skills=tool_skills, push_notifications=True, extended_card=True,
                             extensions=(backend_extension(),))
        return cls(spec, details=details, signer=signer)

    def bind(self, url: str | None = None, *, bearer: bool | None = None,
             api_key_header: str | None = None, oauth2: OAuth2Scheme | None = None,
             jwks_url: str | None = None, grpc_url: str | None = None) -> None:
        """Say where the agent is served and how callers authenticate (HTTP mode), and
        where the signing keys are published: the signatures' ``jku``, unless one was
        configured. ``grpc_url``: where the gRPC binding listens too."""
        if jwks_url is not None and self.signer is not None and self.signer.jku is None:
            self.signer = self.signer.with_jku(jwks_url)
        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = url
        if grpc_url is not None:
            changes["grpc_url"] = grpc_url
        if bearer:
            changes["bearer"] = True
        if api_key_header:
            changes["api_key_header"] = api_key_header
        if oauth2 is not None:
            changes["oauth2"] = oauth2
        if changes.get("bearer") or changes.get("api_key_header") or oauth2 is not None:
            changes["extended_card"] = True  # something is now behind authentication
        self.spec = replace(self.spec, **changes)

    @property
    def capabilities(self) -> dict[str, bool]:
        """The card's switches that methods depend on (``MethodSpec.capability``)."""
        return {methods.STREAMING: self.spec.streaming, methods.PUSH_NOTIFICATIONS: self.spec.push_notifications}

    def refusal(self, spec: methods.MethodSpec) -> Exception | None:
        """The error answering a method that needs a capability the card turns off."""
        if methods.enabled(spec, self.capabilities):
            return None
        data = {"method": spec.name, "capability": spec.capability}
        if spec.capability == methods.PUSH_NOTIFICATIONS:
            return PushNotificationNotSupportedError("Push notifications are not supported by this agent", data)
        return UnsupportedOperationError(f"{spec.name} is not supported: this agent does not stream", data)

    def card(self, version: str = "1.0", extended: bool = False) -> dict[str, Any]:
        """The card in A2A ``version`` ("1.0" or "0.3"), or the public card both read
        (``BOTH``)."""
        if version == BOTH:
            return self._signed(card_both(self.spec))
        if version.startswith("0.3"):
            return self._signed_v03(card_v03(self.spec, extended=extended))
        return self._signed(card_v1(self.spec, extended=extended))

    def _signed(self, card: dict[str, Any]) -> dict[str, Any]:
        return self.signer.sign(card) if self.signer is not None else card

    def _signed_v03(self, card: dict[str, Any]) -> dict[str, Any]:
        return self.signer.sign_v03(card) if self.signer is not None else card

    def jwks(self) -> dict[str, Any] | None:
        """The signing keys' public JWK Set, or None when cards are not signed."""
        return self.signer.jwks() if self.signer is not None else None

    async def extended_card(self, context: CallContext | None = None, **_: Any) -> dict[str, Any]:
        if not self.spec.extended_card:
            raise ExtendedAgentCardNotConfiguredError()
        version = "0.3" if context is not None and context.dialect == dialects.A2A_V03 else "1.0"
        card = self.card(version, extended=True)
        self._add_details(card)
        if self.callback is not None:
            changed = self.callback(card)
            if inspect.isawaitable(changed):
                changed = await changed
            if isinstance(changed, dict):
                card = changed
            elif changed is not None:
                logger.warning("extended_agent_card_callback returned a %s, not a dict or None: the card it was "
                               "given is served", type(changed).__name__)
        if self.signer is not None:  # what the details and the callback added is signed too
            unsigned = {k: v for k, v in card.items() if k != "signatures"}
            card = self._signed(unsigned) if version == "1.0" else self._signed_v03(unsigned)
        return card

    def _add_details(self, card: dict[str, Any]) -> None:
        """Our extension's entry gets every method name (less those the card turns
        off) and what ``details`` gives (the actors, the limits)."""
        entry = next((e for e in card["capabilities"].get("extensions", ()) if e["uri"] == EXTENSION_URI), None)
        if entry is None:
            return
        extra: dict[str, Any] = {"methodNames": method_names(self.capabilities)}
        if self.details is not None:
            extra.update(self.details())
        entry["params"] = {**entry.get("params", {}), **extra}
