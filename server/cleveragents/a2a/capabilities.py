"""What the backend declares about its A2A support, from the method table.

Light on purpose: the stdio server sends this in its ``initialize`` answer, before the
services load.
"""

from __future__ import annotations

from typing import Any

from cleveragents._version import __version__
from cleveragents.a2a import dialects, methods
from cleveragents.a2a.streams import ARTIFACT_NOTIFICATION, EVENT_NOTIFICATION, STATUS_NOTIFICATION
from cleveragents.a2a.version import DEFAULT_VERSION, SUPPORTED_VERSIONS

EXTENSION_URI = "urn:cleveragents:extensions:v1"
AGENT_NAME = "CleverAgents"
AGENT_DESCRIPTION = "Autonomous software engineering agent"

NOTIFICATIONS = (EVENT_NOTIFICATION, STATUS_NOTIFICATION, ARTIFACT_NOTIFICATION, "$/progress")


def a2a_capabilities(agent_card: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``capabilities.experimental.a2a`` object of the stdio ``initialize`` result;
    ``agent_card`` is a published agent's own card (else the backend's summary)."""
    return {
        "versions": list(SUPPORTED_VERSIONS),
        "defaultVersion": DEFAULT_VERSION,
        "agentCard": agent_card or {
            "name": AGENT_NAME,
            "description": AGENT_DESCRIPTION,
            "version": __version__,
            "capabilities": {
                "streaming": True,
                "pushNotifications": True,
                "extensions": [
                    {"uri": EXTENSION_URI, "required": False,
                     "params": {"methods": methods.extension_method_names()}},
                ],
            },
        },
        "methods": {
            "1.0": methods.names_by_dialect(dialects.A2A_V1),
            "0.3": methods.names_by_dialect(dialects.A2A_V03),
            "extension": methods.extension_method_names(),
            "deprecated": methods.names_by_dialect(dialects.LEGACY),
        },
        "notifications": list(NOTIFICATIONS),
    }
