"""The card's ``oauth2`` security scheme: its flow, its scopes, and the scopes a call
needs, in the A2A 1.0 shape (``OAuth2SecurityScheme``, whose ``flows`` is one of
authorization code, client credentials or device code) and the 0.3 one (``type:
oauth2`` and an OpenAPI-style ``flows`` object, which has no device code flow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cleveragents.a2a.access import ScopeGrants
from cleveragents.config import OAuth2

OAUTH2_SCHEME = "oauth2"
AUTHORIZATION_CODE = "authorizationCode"
CLIENT_CREDENTIALS = "clientCredentials"
DEVICE_CODE = "deviceCode"
DESCRIPTION = "OAuth2 access tokens (JWTs) sent as Authorization: Bearer"
# The requirement the card states: the scopes that let a client send a message.
MAIN_METHOD = "SendMessage"


@dataclass(frozen=True, slots=True)
class OAuth2Scheme:
    flow: str  # AUTHORIZATION_CODE, CLIENT_CREDENTIALS or DEVICE_CODE
    token_url: str
    scopes: tuple[tuple[str, str], ...] = ()  # (scope, what it grants)
    # Alternatives, any one enough: each the scopes a client asks for.
    requirements: tuple[tuple[str, ...], ...] = ((),)
    authorization_url: str | None = None
    device_authorization_url: str | None = None
    refresh_url: str | None = None
    metadata_url: str | None = None

    @classmethod
    def of(cls, config: OAuth2, grants: ScopeGrants) -> OAuth2Scheme:
        flow = (AUTHORIZATION_CODE if config.authorization_url else DEVICE_CODE if config.device_authorization_url
                else CLIENT_CREDENTIALS)
        scopes = tuple((scope, "Grants " + ", ".join("every method" if g == "*" else g for g in granted))
                       for scope, granted in grants.scopes.items())
        granting = grants.granting(MAIN_METHOD)
        if granting is None:
            requirements: tuple[tuple[str, ...], ...] = ((),)
        else:
            requirements = tuple((scope,) for scope in (granting or grants.scopes))
        return cls(flow, str(config.token_url), scopes, requirements, config.authorization_url,
                   config.device_authorization_url, config.refresh_url, config.metadata_url)

    def _flow(self) -> dict[str, Any]:
        flow: dict[str, Any] = {}
        if self.flow == AUTHORIZATION_CODE:
            flow["authorizationUrl"] = self.authorization_url
        elif self.flow == DEVICE_CODE:
            flow["deviceAuthorizationUrl"] = self.device_authorization_url
        flow["tokenUrl"] = self.token_url
        if self.refresh_url:
            flow["refreshUrl"] = self.refresh_url
        flow["scopes"] = dict(self.scopes)
        return flow

    def v1(self) -> dict[str, Any]:
        scheme: dict[str, Any] = {"description": DESCRIPTION, "flows": {self.flow: self._flow()}}
        if self.metadata_url:
            scheme["oauth2MetadataUrl"] = self.metadata_url
        return {"oauth2SecurityScheme": scheme}

    def both(self) -> dict[str, Any]:
        """For the card 1.0 and 0.3 clients both read: both spellings. A 1.0 reader of
        0.3 cards (the a2a-sdk's) takes the 0.3 spelling when there is a ``type``, so
        the 0.3 ``flows`` carries a device code flow here too (0.3 readers skip it)."""
        return {**self.v03(), "flows": {self.flow: self._flow()}, **self.v1()}

    def v03(self) -> dict[str, Any]:
        flows = {} if self.flow == DEVICE_CODE else {self.flow: self._flow()}
        scheme: dict[str, Any] = {"type": "oauth2", "description": DESCRIPTION, "flows": flows}
        if self.metadata_url:
            scheme["oauth2MetadataUrl"] = self.metadata_url
        return scheme
