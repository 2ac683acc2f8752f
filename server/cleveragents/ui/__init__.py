"""User-interface payloads an agent may send: ``cleveragents.ui.a2ui``."""
