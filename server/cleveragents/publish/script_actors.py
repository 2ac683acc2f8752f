"""An ``Agent``'s ``provider/model`` actor, resolved for ``agent.start`` in a plain script.

A server resolves the name in its composition root. A script has none, so the name is
resolved here the same way: the settings from the environment (``CLEVERAGENTS_*``,
``OPENAI_BASE_URL``) and the configuration files (the user's, then the current
directory's workspace file), where declared actors such as
``[actors."team/reviewer"]`` are found.
"""

from __future__ import annotations

from cleveragents.config import Settings
from cleveragents.domain.actor import Actor


def resolve_for_script(name: str) -> Actor:
    """The actor called ``name``; ``ValidationError`` for an unknown provider,
    ``ConfigError`` for a bad configuration file. It reads files: call it off the loop."""
    from cleveragents.container import load_configuration, remote_client
    from cleveragents.infra.actors.resolve import resolve_actor

    settings = Settings.from_env()
    config = load_configuration(settings)
    settings = settings.with_file_defaults(config.defaults)
    return resolve_actor(name, settings, declared=config.declared_actors(),
                         remote=lambda url: remote_client(settings, url))
