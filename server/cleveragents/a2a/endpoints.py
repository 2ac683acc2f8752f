"""Which object serves each service key of the method table.

Most application services answer their methods themselves. These are served through a
handler at the protocol boundary, which the facade binds here, by type:

- a ``TaskService`` through ``TaskEndpoint``: the A2A task methods take their params
  model and leave what differs by dialect, and their results, to the codec of the
  call's dialect;
- a ``PlanLifecycleService`` and a ``SessionService`` through ``PlanEndpoint`` and
  ``SessionEndpoint``: they answer with domain objects, which ``extension_codec``
  encodes;
- an ``A2AEventQueue`` through ``EventSubscriptions``: a subscription needs the
  caller's context (whether a live stream can follow the response).

A handler given in their place (already a ``TaskEndpoint``, say) is used as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cleveragents.a2a.events import A2AEventQueue
from cleveragents.a2a.extension_endpoints import PlanEndpoint, SessionEndpoint
from cleveragents.a2a.subscriptions import EventSubscriptions
from cleveragents.a2a.task_endpoint import TaskEndpoint
from cleveragents.app.plans import PlanLifecycleService
from cleveragents.app.sessions import SessionService
from cleveragents.app.tasks import TaskService

# service key -> (the service's type, the handler that serves it)
PROTOCOL_HANDLERS: dict[str, tuple[type[Any], Callable[[Any], object]]] = {
    "task_service": (TaskService, TaskEndpoint),
    "event_queue": (A2AEventQueue, EventSubscriptions),
    "plan_lifecycle_service": (PlanLifecycleService, PlanEndpoint),
    "session_service": (SessionService, SessionEndpoint),
}


def bind_handlers(services: Mapping[str, Any]) -> dict[str, Any]:
    """The object each service key names: the service, or the handler that serves it."""
    handlers = dict(services)
    for key, (service_type, handler) in PROTOCOL_HANDLERS.items():
        if isinstance(service := services.get(key), service_type):
            handlers[key] = handler(service)
    return handlers
