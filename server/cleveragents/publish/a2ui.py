"""A2UI (Agent-to-User Interface) payloads in A2A replies.

An A2UI message (``createSurface``, ``updateComponents``, ``updateDataModel``, ...)
travels as a data part whose metadata says ``mimeType: application/json+a2ui``; a
client that renders A2UI picks those parts out of a reply's artifacts, and any other
client sees ordinary data. The newer ``application/a2ui+json`` spelling is recognized
too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cleveragents.domain.task import Part
from cleveragents.publish.parts import DataPart

A2UI_MIME_TYPE = "application/json+a2ui"
A2UI_MIME_TYPES = frozenset({A2UI_MIME_TYPE, "application/a2ui+json"})
MIME_TYPE_KEY = "mimeType"


def create_a2ui_part(a2ui_data: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None) -> DataPart:
    """A data part that carries one A2UI message (an object such as
    ``{"createSurface": {...}}``); ``metadata`` adds to the A2UI media type."""
    if not isinstance(a2ui_data, Mapping):
        raise TypeError(f"an A2UI message is an object (one per part), not {type(a2ui_data).__name__}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, not {type(metadata).__name__}")
    return DataPart(dict(a2ui_data), metadata={**(metadata or {}), MIME_TYPE_KEY: A2UI_MIME_TYPE})


def is_a2ui_part(part: Part | Mapping[str, Any]) -> bool:
    """Whether ``part`` is a data part that carries A2UI: a ``Part`` (one received, or
    made here), or a part as JSON in either A2A dialect."""
    if isinstance(part, Part):
        is_data, metadata = part.kind == "data", part.metadata
    elif isinstance(part, Mapping):
        is_data, metadata = "data" in part and part.get("kind", "data") == "data", part.get("metadata")
    else:
        return False
    if not is_data or not isinstance(metadata, Mapping):
        return False
    mime_type = metadata.get(MIME_TYPE_KEY)
    return isinstance(mime_type, str) and mime_type in A2UI_MIME_TYPES
