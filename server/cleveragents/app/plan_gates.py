"""Answering a plan's gate with an A2A message, as a multi-turn interaction.

A plan waiting for approval is an input-required task whose id and context id are
the plan's id. A ``message/send`` to that context approves the waiting step (execute
or apply) when it says so plainly, cancels the plan when it says no, and otherwise
leaves it waiting with a reply that says which words it takes. The answer is the plan
as a task, which ``tasks/get`` and ``tasks/cancel`` also reach.
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

_APPROVAL = re.compile(r"^\s*(yes|y|approved?|ok(ay)?|lgtm|proceed|go ahead|apply|execute|ship it)\b", re.IGNORECASE)
_REFUSAL = re.compile(r"^\s*(no|nope|reject(ed)?|deny|denied|cancel|stop|abort)\b", re.IGNORECASE)
HOW_TO_ANSWER = ("Answer `approve` (or yes, ok, lgtm, proceed) to go on, or `reject` (or no, cancel) "
                 "to cancel the plan; a data part {\"approve\": true|false} works too.")

_TASK_STATE = {
    State.READY: TaskState.WORKING, State.RUNNING: TaskState.WORKING,
    State.INPUT_REQUIRED: TaskState.INPUT_REQUIRED, State.FAILED: TaskState.FAILED,
    State.INTERRUPTED: TaskState.FAILED, State.CANCELLED: TaskState.CANCELED,
}


def plan_task_state(plan: Plan) -> TaskState:
    if plan.state is State.COMPLETED:
        return TaskState.COMPLETED if plan.phase in (Phase.APPLY, Phase.ROLLBACK) else TaskState.WORKING
    return _TASK_STATE[plan.state]


def plan_as_task(plan: Plan, note: str, question: Message | None = None) -> Task:
    reply = Message(new_id(), Role.AGENT, (Part.of_text(note),), plan.context_id, plan.plan_id)
    status = TaskStatus(plan_task_state(plan), utc_now(), reply)
    history = (question, reply) if question is not None else (reply,)
    return Task(plan.plan_id, plan.context_id, status, history, (),
                {"plan": plan.status(), "action_name": plan.action_name})


def _verdict(message: Message) -> bool | None:
    """True to approve, False to refuse, None when the message says neither."""
    for part in message.parts:
        if part.has_data and isinstance(part.data, dict) and isinstance(part.data.get("approve"), bool):
            return bool(part.data["approve"])
    text = message.text()
    if _REFUSAL.match(text):
        return False
    if _APPROVAL.match(text):
        return True
    return None


class PlanGates:
    """The TaskService's router for messages that answer a plan."""

    def __init__(self, plans: PlanLifecycleService):
        self._plans = plans

    async def _plan(self, plan_id: str | None) -> Plan | None:
        if not plan_id:
            return None
        try:
            return await self._plans.get(plan_id)
        except ResourceNotFoundError:
            return None  # not a plan: an ordinary task context

    async def task(self, task_id: str) -> Task | None:
        plan = await self._plan(task_id)
        return None if plan is None else plan_as_task(plan, f"The plan is {plan.phase.value}/{plan.state.value}.")

    async def cancel(self, task_id: str) -> Task | None:
        plan = await self._plan(task_id)
        if plan is None:
            return None
        await self._plans.cancel(task_id)
        return plan_as_task(await self._plans.get(task_id), "The plan is cancelled.")

    async def claim(self, message: Message) -> Task | None:
        if not (message.task_id or message.context_id):
            return None  # a new conversation: no plan to answer
        plan = await self._plan(message.task_id or message.context_id)
        if plan is None:
            return None
        plan_id = plan.plan_id
        if plan.state is not State.INPUT_REQUIRED:
            note = f"The plan is {plan.phase.value}/{plan.state.value}; it is not waiting for an answer."
            return plan_as_task(plan, note, message)
        verdict = _verdict(message)
        if verdict is None:
            return plan_as_task(plan, f"The plan is still waiting. {HOW_TO_ANSWER}", message)
        if verdict is False:
            await self._plans.cancel(plan_id)
            return plan_as_task(await self._plans.get(plan_id), "Rejected: the plan is cancelled.", message)
        if plan.phase is Phase.PLAN:
            await self._plans.execute(plan_id)
            note = "Approved: the plan was executed."
        else:
            await self._plans.apply(plan_id)
            note = "Approved: the plan was applied."
        return plan_as_task(await self._plans.get(plan_id), note, message)


