"""A store as one object, for the tests and scripts that use it whole.

The services are given the store's repositories one by one (``sessions``, ``tasks``,
``push_configs``, ``plans``, ``pins``, ``events``); the store also answers each of their
calls itself, so ``store.add_task(...)`` is ``store.tasks.add_task(...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class WholeStore:
    def _expose(self, *repositories: object) -> None:
        """Bind each repository's public calls on the store (once, so a call costs no
        more than on the repository); the store's own methods, and a subclass's, win."""
        own = type(self)
        for repository in repositories:
            for name, value in vars(type(repository)).items():
                if not name.startswith("_") and callable(value) and not hasattr(own, name):
                    setattr(self, name, getattr(repository, name))

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any: ...
