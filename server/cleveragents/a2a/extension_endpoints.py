"""The plan and session methods, over their services.

The facade calls these with the request's validated params; each calls the service,
which answers with domain objects, and encodes the answer with ``extension_codec``,
as ``TaskEndpoint`` does for tasks.
"""

from __future__ import annotations

from typing import Any

from cleveragents.a2a import extension_codec as wire
from cleveragents.app.calls import CallContext
from cleveragents.app.plans import PlanLifecycleService
from cleveragents.app.sessions import SessionService
from cleveragents.domain.session import SessionStatus


class PlanEndpoint:
    def __init__(self, service: PlanLifecycleService):
        self.service = service

    async def use(self, action_name: str, arguments: dict[str, Any] | None = None,
                  automation_profile: str | None = None, session_id: str | None = None) -> dict[str, Any]:
        return wire.plan_created(await self.service.use(action_name, arguments, automation_profile, session_id))

    async def status(self, plan_id: str) -> dict[str, Any]:
        return wire.plan_status(await self.service.status(plan_id))

    async def list(self, session_id: str | None = None, limit: int = 100, cursor: str | None = None) -> dict[str, Any]:
        return wire.plan_page(await self.service.list(session_id, limit, cursor))

    async def tree(self, plan_id: str) -> dict[str, Any]:
        return wire.plan_tree(await self.service.tree(plan_id))

    async def explain(self, plan_id: str, decision_id: str) -> dict[str, Any]:
        return wire.decision_explained(await self.service.explain(plan_id, decision_id))

    async def diff(self, plan_id: str, context: CallContext | None = None) -> dict[str, Any]:
        return wire.plan_diff(await self.service.diff(plan_id, context))

    async def artifacts(self, plan_id: str) -> dict[str, Any]:
        return wire.plan_artifacts(await self.service.artifacts(plan_id))

    async def prompt(self, plan_id: str, guidance: str) -> dict[str, Any]:
        return wire.plan_prompted(await self.service.prompt(plan_id, guidance))

    async def cancel(self, plan_id: str) -> dict[str, Any]:
        return wire.plan_moved(await self.service.cancel(plan_id))

    async def execute(self, plan_id: str, wait: bool = True, context: CallContext | None = None) -> dict[str, Any]:
        return wire.plan_moved(await self.service.execute(plan_id, wait, context))

    async def correct(self, plan_id: str, decision_id: str | None = None, guidance: str | None = None,
                      arguments: dict[str, Any] | None = None, wait: bool = True,
                      context: CallContext | None = None) -> dict[str, Any]:
        return wire.plan_moved(await self.service.correct(plan_id, decision_id, guidance, arguments, wait, context))

    async def apply(self, plan_id: str, force: bool = False, context: CallContext | None = None) -> dict[str, Any]:
        return wire.plan_written(await self.service.apply(plan_id, force, context))

    async def rollback(self, plan_id: str, force: bool = False, context: CallContext | None = None) -> dict[str, Any]:
        return wire.plan_written(await self.service.rollback(plan_id, force, context))


class SessionEndpoint:
    def __init__(self, service: SessionService):
        self.service = service

    async def create(self, actor_name: str | None = None, actor: str | None = None, session_id: str | None = None,
                     metadata: dict[str, Any] | None = None, budget: dict[str, Any] | None = None) -> dict[str, Any]:
        return wire.session_created(await self.service.create(actor_name, actor, session_id, metadata, budget))

    async def close(self, session_id: str) -> dict[str, Any]:
        return wire.session_closed(await self.service.close(session_id))

    async def delete(self, session_id: str) -> dict[str, Any]:
        return await self.service.delete(session_id)

    async def get(self, session_id: str) -> dict[str, Any]:
        return wire.session(await self.service.get(session_id))

    async def update(self, session_id: str, metadata: dict[str, Any]) -> dict[str, Any]:
        return wire.session(await self.service.update(session_id, metadata))

    async def list(self, status: SessionStatus | None = None, limit: int = 100,
                   cursor: str | None = None) -> dict[str, Any]:
        return wire.session_page(await self.service.list(status, limit, cursor))
