"""Answering a plan's gate with an A2A message (seed 000, "Multi-Turn Interactions").

A plan waiting for approval is an input-required task whose id and context id are
the plan's id. A ``message/send`` to that context approves the waiting step (execute
or apply), or cancels the plan when it says no. The reply is the plan as a task.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cleveragents.domain.errors import ResourceNotFoundError
from cleveragents.domain.plan import Phase, Plan, State
from cleveragents.domain.task import Message, Part, Role, Task, TaskState, TaskStatus
from cleveragents.ids import new_id, utc_now

if TYPE_CHECKING:
    from cleveragents.app.plans import PlanLifecycleService

_REFUSAL = re.compile(r"^\s*(no|nope|reject(ed)?|deny|denied|cancel|stop|abort)\b", re.IGNORECASE)

_TASK_STATE = {
    State.READY: TaskState.WORKING, State.RUNNING: TaskState.WORKING,
    State.INPUT_REQUIRED: TaskState.INPUT_REQUIRED, State.FAILED: TaskState.FAILED,
    State.INTERRUPTED: TaskState.FAILED, State.CANCELLED: TaskState.CANCELED,
}


def plan_task_state(plan: Plan) -> TaskState:
    if plan.state is State.COMPLETED:
        return TaskState.COMPLETED if plan.phase in (Phase.APPLY, Phase.ROLLBACK) else TaskState.WORKING
    return _TASK_STATE[plan.state]


def plan_as_task(plan: Plan, note: str) -> Task:
    reply = Message(new_id(), Role.AGENT, (Part.of_text(note),), plan.context_id, plan.plan_id)
    status = TaskStatus(plan_task_state(plan), utc_now(), reply)
    return Task(plan.plan_id, plan.context_id, status, (reply,), (),
                {"plan": plan.status(), "action_name": plan.action_name})


class PlanGates:
    """The TaskService's router for messages that answer a plan."""

    def __init__(self, plans: PlanLifecycleService):
        self._plans = plans

    async def claim(self, message: Message) -> Task | None:
        plan_id = message.task_id or message.context_id
        if not plan_id:
            return None
        try:
            plan = await self._plans.get(plan_id)
        except ResourceNotFoundError:
            return None  # not a plan: an ordinary task context
        if plan.state is not State.INPUT_REQUIRED:
            return plan_as_task(plan, f"The plan is {plan.phase.value}/{plan.state.value}; it is not waiting for you.")
        if _REFUSAL.match(message.text()):
            await self._plans.cancel(plan_id)
            return plan_as_task(await self._plans.get(plan_id), "Rejected: the plan is cancelled.")
        if plan.phase is Phase.PLAN:
            await self._plans.execute(plan_id)
            note = "Approved: the plan was executed."
        else:
            await self._plans.apply(plan_id)
            note = "Approved: the plan was applied."
        return plan_as_task(await self._plans.get(plan_id), note)
