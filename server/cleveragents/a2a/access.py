"""Which methods an OAuth2 scope grants.

Every method belongs to one group: ``read`` (it only looks: tasks, plans, registries,
context, events, the extended card), ``send`` (it starts or steers work: messages,
cancels, push configs, sessions, plan steps short of applying) or ``admin`` (it
changes the workspace or reaches past the agent: applying and rolling back plans,
diagnostics, sync). A scope grants groups and method-name patterns (``fnmatch``
syntax: ``_cleveragents/plan/*``, ``*``); a pattern matches a method under any of its
names, so ``SendMessage`` also grants ``message/send``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

from cleveragents.a2a import methods

READ = "read"
SEND = "send"
ADMIN = "admin"
GROUPS = (READ, SEND, ADMIN)

# (service, call) -> group: the calls every name of a method shares.
_GROUP_OF: dict[tuple[str, str], str] = {}
for _group, _calls in {
    READ: [("task_service", c) for c in ("get", "list", "subscribe", "get_push_config", "list_push_configs")]
    + [("agent_card_service", "extended_card"), ("session_service", "get"), ("session_service", "list")]
    + [("plan_lifecycle_service", c) for c in ("status", "tree", "explain", "diff", "artifacts", "list")]
    + [("tool_registry", "list_tools"), ("resource_registry_service", "list_resources")]
    + [("registry_service", c) for c in ("list_actors", "list_skills", "list_actions", "list_projects")]
    + [("context_service", c) for c in ("show", "inspect", "simulate")]
    + [("health_service", "check"), ("sync_service", "status")]
    + [("namespace_service", c) for c in ("list", "show", "members")]
    + [("event_queue", "subscribe"), ("event_queue", "unsubscribe")],
    SEND: [("task_service", c) for c in ("send", "stream", "cancel", "create_push_config", "delete_push_config")]
    + [("session_service", c) for c in ("create", "close", "update", "delete")] + [("context_service", "set")]
    + [("plan_lifecycle_service", c) for c in ("use", "execute", "prompt", "correct", "cancel")],
    ADMIN: [("plan_lifecycle_service", "apply"), ("plan_lifecycle_service", "rollback"),
            ("health_service", "diagnostics"), ("sync_service", "pull"), ("sync_service", "push")],
}.items():
    for _call in _calls:
        _GROUP_OF[_call] = _group


def group_of(spec: methods.MethodSpec) -> str | None:
    return _GROUP_OF.get((spec.service, spec.call))


def names_of(spec: methods.MethodSpec) -> tuple[str, ...]:
    """Every name the method answers to (1.0, 0.3 and legacy spellings)."""
    return tuple(s.name for s in methods.METHODS.values() if (s.service, s.call) == (spec.service, spec.call))


class ScopeGrants:
    """The scopes that grant each method. ``ValueError`` names a grant that is neither
    a group nor a pattern matching some method (a typo would grant nothing)."""

    def __init__(self, scopes: Mapping[str, Sequence[str]]):
        self.scopes = {scope: tuple(grants) for scope, grants in scopes.items()}
        granting: dict[str, list[str]] = {name: [] for name in methods.METHODS}
        for scope, grants in self.scopes.items():
            for grant in grants:
                matched = self._matching(grant)
                if not matched:
                    raise ValueError(f"oauth2.scopes.{scope}: {grant!r} is neither a group ({', '.join(GROUPS)}) "
                                     "nor a pattern matching a method name")
                for name in matched:
                    if scope not in granting[name]:
                        granting[name].append(scope)
        self._granting = {name: tuple(found) for name, found in granting.items()}

    @staticmethod
    def _matching(grant: str) -> set[str]:
        """The method names ``grant`` covers, each with all its other names."""
        specs = methods.METHODS.values()
        if grant in GROUPS:
            chosen = [s for s in specs if group_of(s) == grant]
        else:
            chosen = [s for s in specs if fnmatch.fnmatchcase(s.name, grant)]
        return {name for spec in chosen for name in names_of(spec)}

    @property
    def restricted(self) -> bool:
        """Whether scopes decide anything (with none configured, a valid token may call every method)."""
        return bool(self.scopes)

    def granting(self, method: str) -> tuple[str, ...] | None:
        """The scopes that grant ``method``, any one being enough; ``None`` when
        nothing is restricted or the method is unknown (its call answers -32601)."""
        if not self.scopes:
            return None
        return self._granting.get(method)

    def allows(self, method: str, held: frozenset[str]) -> bool:
        needed = self.granting(method)
        return needed is None or not held.isdisjoint(needed)
