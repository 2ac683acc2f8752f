"""What the backend declares about its A2A support, from the method table.

Light on purpose: the stdio server sends this in its ``initialize`` answer, before the
services load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cleveragents._version import __version__
from cleveragents.a2a import dialects, methods
from cleveragents.a2a.cards import SkillSpec, skill_entry
from cleveragents.a2a.extensions import AgentExtension
from cleveragents.a2a.streams import ARTIFACT_NOTIFICATION, EVENT_NOTIFICATION, STATUS_NOTIFICATION
from cleveragents.a2a.version import DEFAULT_VERSION, SUPPORTED_VERSIONS

EXTENSION_URI = "urn:cleveragents:extensions:v1"
EXTENSION_DESCRIPTION = "CleverAgents platform methods (plans, registries, context)"
AGENT_NAME = "CleverAgents"
AGENT_DESCRIPTION = "Autonomous software engineering agent"

# The backend's skills, on its card (the tools go on the extended card only).
BACKEND_SKILLS = (
    SkillSpec("plan-lifecycle", "Plan lifecycle",
              "Plan a change from an action, run it in an overlay, review the diff, then apply, correct or roll it "
              "back.", ("plan", "code"), ("Replace foo with bar in every Python file",)),
    SkillSpec("registry-crud", "Registries",
              "List the tools, actions, actors, skills, resources and projects this backend knows.",
              ("registry",), ("Which tools can edit files?",)),
    SkillSpec("context-management", "Context management",
              "Show, pin and budget the context an actor gets for a session or a plan.",
              ("context",), ("Pin src/app.py for this session",)),
)

NOTIFICATIONS = (EVENT_NOTIFICATION, STATUS_NOTIFICATION, ARTIFACT_NOTIFICATION, "$/progress")


def backend_extension() -> AgentExtension:
    """Our extension as cards list it: its methods as a glob per family."""
    return AgentExtension(EXTENSION_URI, EXTENSION_DESCRIPTION, methods=tuple(methods.extension_method_globs()))


def method_names(capabilities: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """Every method served, by dialect, less those the card's ``capabilities`` turn off."""
    return {
        "1.0": methods.names_by_dialect(dialects.A2A_V1, capabilities=capabilities),
        "0.3": methods.names_by_dialect(dialects.A2A_V03, capabilities=capabilities),
        "extension": methods.extension_method_names(),
        "deprecated": methods.names_by_dialect(dialects.LEGACY),
    }


def a2a_capabilities(agent_card: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``capabilities.experimental.a2a`` object of the stdio ``initialize`` result;
    ``agent_card`` is a published agent's own card (else the backend's summary)."""
    extension = backend_extension()
    card = agent_card or {
        "name": AGENT_NAME,
        "description": AGENT_DESCRIPTION,
        "version": __version__,
        "skills": [skill_entry(skill) for skill in BACKEND_SKILLS],
        "capabilities": {
            "streaming": True,
            "pushNotifications": True,
            "extensions": [
                {"uri": extension.uri, "required": False, "params": {"methods": list(extension.methods)}},
            ],
        },
    }
    return {
        "versions": list(SUPPORTED_VERSIONS),
        "defaultVersion": DEFAULT_VERSION,
        "agentCard": card,
        "methods": method_names(card.get("capabilities")),
        "notifications": list(NOTIFICATIONS),
    }
