"""How each operation of the method table is called: its params model and its handler.

The method table (``methods.py``) is read before ``initialize`` is answered, so it
names operations by their service key and call and imports nothing. This module is
the typed side of those names, loaded with the services: for each ``(service, call)``
a ``Binding`` gives the params model the request is validated into and a handler that
takes the object serving the key, the validated model and the call's context. A type
checker holds every handler to its model's fields and its service's signature.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from cleveragents.a2a import params as p
from cleveragents.a2a.card_service import AgentCardService
from cleveragents.a2a.extension_endpoints import PlanEndpoint, SessionEndpoint
from cleveragents.a2a.subscriptions import EventSubscriptions
from cleveragents.a2a.task_endpoint import TaskEndpoint
from cleveragents.app.calls import CallContext
from cleveragents.app.context import ContextService
from cleveragents.app.health import HealthService
from cleveragents.app.registry import RegistryService, ResourceRegistryService, ToolRegistry

S = TypeVar("S")
P = TypeVar("P", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Binding(Generic[S, P]):
    """One operation. ``serves`` is what its service key holds (``endpoints.py`` puts
    the protocol handlers in place of their services); ``call`` answers with the result
    or an awaitable of it."""

    serves: type[S]
    params: type[P]
    call: Callable[[S, P, CallContext | None], object]


def _bind(serves: type[S], params: type[P], call: Callable[[S, P, CallContext | None], object]) -> Binding[Any, Any]:
    """A binding the checker reads with its own types (inside ``BINDINGS``, typed
    ``Binding[Any, Any]``, a lambda's arguments would be inferred as ``Any``)."""
    return Binding(serves, params, call)


class SyncService(Protocol):
    """What ``_cleveragents/sync/*`` expects under ``sync_service`` (none is built in)."""

    def pull(self, namespace: str | None = None) -> object: ...
    def push(self, namespace: str | None = None) -> object: ...
    def status(self, namespace: str | None = None) -> object: ...


class NamespaceService(Protocol):
    """What ``_cleveragents/namespace/*`` expects under ``namespace_service`` (none is built in)."""

    def list(self) -> object: ...
    def show(self, namespace: str) -> object: ...
    def members(self, namespace: str) -> object: ...


# Neither is built in, so a protocol names what is expected; a protocol can stand for
# ``type[S]`` only through a variable.
_SYNC: type[SyncService] = SyncService  # type: ignore[type-abstract]
_NAMESPACES: type[NamespaceService] = NamespaceService  # type: ignore[type-abstract]


_PLAN, _SESSION, _EVENTS = "plan_lifecycle_service", "session_service", "event_queue"
_REGISTRY, _CONTEXT, _HEALTH = "registry_service", "context_service", "health_service"

BINDINGS: dict[tuple[str, str], Binding[Any, Any]] = {
    # Tasks: each handler takes its model; the codec of the call's dialect decodes the rest.
    ("task_service", "send"): _bind(TaskEndpoint, p.SendMessageParams, TaskEndpoint.send),
    ("task_service", "stream"): _bind(TaskEndpoint, p.SendMessageParams, TaskEndpoint.stream),
    ("task_service", "get"): _bind(TaskEndpoint, p.GetTaskParams, TaskEndpoint.get),
    ("task_service", "list"): _bind(TaskEndpoint, p.ListTasksParams, TaskEndpoint.list),
    ("task_service", "cancel"): _bind(TaskEndpoint, p.TaskIdParams, TaskEndpoint.cancel),
    ("task_service", "subscribe"): _bind(TaskEndpoint, p.SubscribeToTaskParams, TaskEndpoint.subscribe),
    ("task_service", "create_push_config"): _bind(TaskEndpoint, p.PushConfigParams, TaskEndpoint.create_push_config),
    ("task_service", "get_push_config"): _bind(TaskEndpoint, p.PushConfigParams, TaskEndpoint.get_push_config),
    ("task_service", "list_push_configs"): _bind(TaskEndpoint, p.PushConfigParams, TaskEndpoint.list_push_configs),
    ("task_service", "delete_push_config"): _bind(TaskEndpoint, p.PushConfigParams, TaskEndpoint.delete_push_config),
    ("agent_card_service", "extended_card"): _bind(
        AgentCardService, p.ExtendedCardParams, lambda h, q, c: h.extended_card(c)),
    # Sessions
    (_SESSION, "create"): _bind(SessionEndpoint, p.SessionCreateParams, lambda h, q, c: h.create(
        q.actor_name, q.actor, q.session_id, q.metadata, None if q.budget is None else q.budget.model_dump())),
    (_SESSION, "close"): _bind(SessionEndpoint, p.SessionIdParams, lambda h, q, c: h.close(q.session_id)),
    (_SESSION, "delete"): _bind(SessionEndpoint, p.SessionIdParams, lambda h, q, c: h.delete(q.session_id)),
    (_SESSION, "get"): _bind(SessionEndpoint, p.SessionIdParams, lambda h, q, c: h.get(q.session_id)),
    (_SESSION, "update"): _bind(SessionEndpoint, p.SessionUpdateParams,
                                  lambda h, q, c: h.update(q.session_id, q.metadata)),
    (_SESSION, "list"): _bind(SessionEndpoint, p.SessionListParams,
                                lambda h, q, c: h.list(q.status, q.limit, q.cursor)),
    # Plans
    (_PLAN, "use"): _bind(PlanEndpoint, p.PlanUseParams, lambda h, q, c: h.use(
        q.action_name, q.arguments, q.automation_profile, q.session_id)),
    (_PLAN, "execute"): _bind(PlanEndpoint, p.PlanExecuteParams,
                                lambda h, q, c: h.execute(q.plan_id, q.wait, c)),
    (_PLAN, "apply"): _bind(PlanEndpoint, p.PlanApplyParams, lambda h, q, c: h.apply(q.plan_id, q.force, c)),
    (_PLAN, "cancel"): _bind(PlanEndpoint, p.PlanIdParams, lambda h, q, c: h.cancel(q.plan_id)),
    (_PLAN, "status"): _bind(PlanEndpoint, p.PlanIdParams, lambda h, q, c: h.status(q.plan_id)),
    (_PLAN, "tree"): _bind(PlanEndpoint, p.PlanIdParams, lambda h, q, c: h.tree(q.plan_id)),
    (_PLAN, "explain"): _bind(PlanEndpoint, p.PlanExplainParams,
                                lambda h, q, c: h.explain(q.plan_id, q.decision_id)),
    (_PLAN, "correct"): _bind(PlanEndpoint, p.PlanCorrectParams, lambda h, q, c: h.correct(
        q.plan_id, q.decision_id, q.guidance, q.arguments, q.wait, c)),
    (_PLAN, "diff"): _bind(PlanEndpoint, p.PlanIdParams, lambda h, q, c: h.diff(q.plan_id, c)),
    (_PLAN, "artifacts"): _bind(PlanEndpoint, p.PlanIdParams, lambda h, q, c: h.artifacts(q.plan_id)),
    (_PLAN, "prompt"): _bind(PlanEndpoint, p.PlanPromptParams, lambda h, q, c: h.prompt(q.plan_id, q.guidance)),
    (_PLAN, "rollback"): _bind(PlanEndpoint, p.PlanRollbackParams,
                                 lambda h, q, c: h.rollback(q.plan_id, q.force, c)),
    (_PLAN, "list"): _bind(PlanEndpoint, p.PlanListParams, lambda h, q, c: h.list(q.session_id, q.limit, q.cursor)),
    # Registries
    ("tool_registry", "list_tools"): _bind(ToolRegistry, p.ToolListParams, lambda h, q, c: h.list_tools(q.namespace)),
    ("resource_registry_service", "list_resources"): _bind(
        ResourceRegistryService, p.ResourceListParams, lambda h, q, c: h.list_resources(q.type_name, q.limit, q.cursor)),
    (_REGISTRY, "list_actors"): _bind(RegistryService, p.PageParams, lambda h, q, c: h.list_actors(q.limit, q.cursor)),
    (_REGISTRY, "list_skills"): _bind(RegistryService, p.PageParams, lambda h, q, c: h.list_skills(q.limit, q.cursor)),
    (_REGISTRY, "list_actions"): _bind(RegistryService, p.EmptyParams, lambda h, q, c: h.list_actions()),
    (_REGISTRY, "list_projects"): _bind(RegistryService, p.PageParams,
                                          lambda h, q, c: h.list_projects(q.limit, q.cursor)),
    # Context
    (_CONTEXT, "show"): _bind(ContextService, p.ContextScopeParams, lambda h, q, c: h.show(q.session_id, q.plan_id)),
    (_CONTEXT, "inspect"): _bind(ContextService, p.ContextScopeParams,
                                   lambda h, q, c: h.inspect(q.session_id, q.plan_id)),
    (_CONTEXT, "simulate"): _bind(ContextService, p.ContextSimulateParams,
                                    lambda h, q, c: h.simulate(q.budget, q.session_id, q.plan_id)),
    (_CONTEXT, "set"): _bind(ContextService, p.ContextSetParams,
                               lambda h, q, c: h.set(q.key, q.value, q.session_id, q.plan_id)),
    # Health & diagnostics
    (_HEALTH, "check"): _bind(HealthService, p.EmptyParams, lambda h, q, c: h.check()),
    (_HEALTH, "diagnostics"): _bind(HealthService, p.DiagnosticsRunParams, lambda h, q, c: h.diagnostics(
        None if q.checks is None else list[str](q.checks))),
    # Sync & namespaces
    ("sync_service", "pull"): _bind(_SYNC, p.SyncParams, lambda h, q, c: h.pull(namespace=q.namespace)),
    ("sync_service", "push"): _bind(_SYNC, p.SyncParams, lambda h, q, c: h.push(namespace=q.namespace)),
    ("sync_service", "status"): _bind(_SYNC, p.SyncParams, lambda h, q, c: h.status(namespace=q.namespace)),
    ("namespace_service", "list"): _bind(_NAMESPACES, p.EmptyParams, lambda h, q, c: h.list()),
    ("namespace_service", "show"): _bind(_NAMESPACES, p.NamespaceParams, lambda h, q, c: h.show(namespace=q.namespace)),
    ("namespace_service", "members"): _bind(_NAMESPACES, p.NamespaceParams,
                                              lambda h, q, c: h.members(namespace=q.namespace)),
    # Events
    (_EVENTS, "subscribe"): _bind(EventSubscriptions, p.EventSubscribeParams, lambda h, q, c: h.subscribe(
        q.plan_id, q.since, q.event_types, c)),
    (_EVENTS, "unsubscribe"): _bind(EventSubscriptions, p.EventUnsubscribeParams,
                                      lambda h, q, c: h.unsubscribe(q.subscription_id, c)),
}
