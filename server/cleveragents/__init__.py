"""CleverAgents: an A2A backend that editors start like a language server."""

from cleveragents._version import __version__

__all__ = ["__version__"]
