"""A2UI parts: ``create_a2ui_part``, ``is_a2ui_part`` and ``A2UI_MIME_TYPE`` (also
exported from ``cleveragents``)."""

from __future__ import annotations

from cleveragents.publish.a2ui import A2UI_MIME_TYPE, create_a2ui_part, is_a2ui_part

__all__ = ["A2UI_MIME_TYPE", "create_a2ui_part", "is_a2ui_part"]
