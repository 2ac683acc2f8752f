"""An ``Agent``'s model actor, resolved for ``agent.start`` in a plain script.

A server resolves actor names in its composition root. A script has none, so they are
resolved here the same way: the settings from the environment (``CLEVERAGENTS_*``,
``OPENAI_BASE_URL``) and the configuration files (the user's, then the current
directory's workspace file), where declared actors such as
``[actors."team/reviewer"]`` are found. An agent that names no actor gets the
configured default actor, unless that is a ``local`` one: then the agent answers
from its own tools.
"""

from __future__ import annotations

from cleveragents.config import Settings
from cleveragents.domain.actor import Actor


def resolve_for_script(name: str | None) -> Actor | None:
    """The actor called ``name``; with ``None``, the configured default actor, or
    ``None`` when that is a local one. ``ValidationError`` for an unknown provider,
    ``ConfigError`` for a bad configuration file. It reads files: call it off the loop."""
    from cleveragents.container.configured import load_configuration, remote_client
    from cleveragents.infra.actors.resolve import is_local_actor, resolve_actor

    settings = Settings.from_env()
    config = load_configuration(settings)
    settings = settings.with_file_defaults(config.defaults)
    declared = config.declared_actors()
    if name is None:
        name = settings.default_actor
        if is_local_actor(name, declared.get(name)):
            return None
    from cleveragents.a2a.card_cache import CardCache
    from cleveragents.a2a.card_signing import verifier_from_settings

    verifier = verifier_from_settings(settings)  # peers' cards are checked as a server checks them
    cards = CardCache()
    return resolve_actor(name, settings, declared=declared,
                         remote=lambda url, token_env: remote_client(settings, url, verifier, token_env, cards))

