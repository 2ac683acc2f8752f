"""Params models for every method in the method table (``methods.py`` names them,
``bindings.py`` binds them to their handlers).

Extension methods reject unknown keys so a typo gets a clear -32602. Standard A2A
methods allow extra keys: the specification grows, and its codecs (the tasks issue)
own the detailed shapes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

Identifier = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:\-]+$")]
# Actors are named `provider/model`, e.g. `local/default` or `openai/gpt-4o`.
ActorName = Annotated[
    str, StringConstraints(min_length=3, max_length=200, pattern=r"^[a-z0-9][a-z0-9_.\-]*/\S+$")
]
AutomationProfile = Literal["manual", "supervised", "autonomous"]


# Validators are built on a model's first use, not at import: most connections use a
# handful of methods, and building all of them would slow every start.
class ExtensionParams(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, defer_build=True)


class StandardParams(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class EmptyParams(ExtensionParams):
    pass


class PageParams(ExtensionParams):
    limit: int = Field(default=100, ge=1, le=500, description="Page size")
    cursor: str | None = Field(default=None, max_length=128, description="`next_cursor` of the previous page")


# Sessions
class BudgetParams(ExtensionParams):
    max_tokens: int | None = Field(default=None, ge=1, description="Most tokens (input + output) the actors may use")
    max_cost: float | None = Field(
        default=None, ge=0, description="Most cost, as the provider reports it or the actor's prices give it")


class SessionCreateParams(ExtensionParams):
    actor_name: ActorName | None = Field(
        default=None, description="The session's actor, `provider/model`; default `local/default`")
    actor: ActorName | None = Field(default=None, description="Alias of actor_name")
    session_id: Identifier | None = Field(default=None, description="Makes the call idempotent: an existing session is returned")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Kept with the session, returned as given")
    budget: BudgetParams | None = Field(
        default=None, description="The session's token and cost budget (kept in the metadata as `budget`)")

    @model_validator(mode="after")
    def _one_actor(self) -> SessionCreateParams:
        if self.actor and self.actor_name and self.actor != self.actor_name:
            raise ValueError("actor and actor_name name different actors; give one")
        return self

    @property
    def chosen_actor(self) -> str | None:
        return self.actor_name or self.actor


class SessionIdParams(ExtensionParams):
    session_id: Identifier = Field(description="The session's id")


class SessionUpdateParams(SessionIdParams):
    metadata: dict[str, Any] = Field(
        description="Keys to set in the session's metadata (a null value removes the key); other keys are kept")


class SessionListParams(PageParams):
    status: Literal["active", "closed"] | None = Field(default=None, description="Only sessions in this status")


# Plans
class PlanUseParams(ExtensionParams):
    action_name: str = Field(min_length=1, max_length=200, description="From `_cleveragents/registry/action/list`")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The action's arguments")
    automation_profile: AutomationProfile | None = Field(
        default=None, description="manual: approve execute and apply; supervised: approve apply; autonomous: no gates. "
                                  "Default: the configuration's `automation_profile`, else supervised")
    session_id: str | None = Field(default=None, max_length=128, description="The session the plan belongs to")


class PlanIdParams(ExtensionParams):
    plan_id: Identifier = Field(description="The plan's id")


class PlanExecuteParams(PlanIdParams):
    wait: bool = Field(default=True, description="Answer when execution ends (false: at once, with state running)")


class PlanApplyParams(PlanIdParams):
    force: bool = Field(default=False, description="Write even over files changed on disk since execute")


class PlanRollbackParams(PlanIdParams):
    force: bool = Field(default=False, description="Restore even files changed on disk since the apply")


class PlanExplainParams(PlanIdParams):
    decision_id: Identifier


class PlanCorrectParams(PlanIdParams):
    decision_id: str | None = Field(default=None, max_length=128, description="Default: the last decision")
    guidance: str | None = Field(default=None, max_length=20_000, description="Guidance for the corrected step")
    arguments: dict[str, Any] | None = Field(default=None, description="New arguments, merged over the step's")
    wait: bool = True

    @model_validator(mode="after")
    def _has_correction(self) -> PlanCorrectParams:
        if self.guidance is None and self.arguments is None:
            raise ValueError("give guidance, arguments, or both")
        return self


class PlanPromptParams(PlanIdParams):
    guidance: str = Field(min_length=1, max_length=20_000)


class PlanListParams(PageParams):
    session_id: str | None = Field(default=None, max_length=128)


# Registries
class ToolListParams(ExtensionParams):
    namespace: str | None = Field(default=None, max_length=100)


class ResourceListParams(PageParams):
    type_name: str | None = Field(default=None, max_length=100, description="Only resources of this type, e.g. `workspace`")


# Context
class ContextScopeParams(ExtensionParams):
    session_id: str | None = Field(default=None, max_length=128)
    plan_id: str | None = Field(default=None, max_length=128)


class ContextSimulateParams(ContextScopeParams):
    budget: int = Field(ge=0, description="Token budget to simulate")


class ContextSetParams(ContextScopeParams):
    key: str = Field(min_length=1, max_length=500)
    value: Any = None


# Health & diagnostics
class DiagnosticsRunParams(ExtensionParams):
    checks: list[Literal["store", "workspace", "actors"]] | None = Field(
        default=None, description="Run only these checks (default: all)")


# Sync & namespaces
class SyncParams(ExtensionParams):
    namespace: str | None = Field(default=None, max_length=200)


class NamespaceParams(ExtensionParams):
    namespace: str = Field(min_length=1, max_length=200)


# Events
class EventSubscribeParams(ExtensionParams):
    plan_id: str | None = Field(default=None, max_length=128, description="Only this plan's events")
    since: str | None = Field(default=None, description="Resume after this event_id")
    event_types: list[str] | None = Field(default=None, max_length=50, description="Only these event types")

    @field_validator("since")
    @classmethod
    def _since_is_ulid(cls, value: str | None) -> str | None:
        from cleveragents.ids import is_ulid

        if value is not None and not is_ulid(value):
            raise ValueError("since must be an event_id (a ULID)")
        return value


class EventUnsubscribeParams(ExtensionParams):
    subscription_id: Identifier = Field(description="From the subscribe result")


# Standard A2A methods (both dialects). Only what every version agrees on is checked.
class SendMessageParams(StandardParams):
    message: dict[str, Any]
    configuration: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class TaskIdParams(StandardParams):
    id: str = Field(min_length=1, max_length=256)


class SubscribeToTaskParams(TaskIdParams):
    lastEventId: str | None = Field(
        default=None, max_length=512,
        description="Resume after this event (an item's `eventId`; the SSE id over HTTP, where the "
                    "`Last-Event-ID` header sets it)")


class GetTaskParams(TaskIdParams):
    historyLength: int | None = Field(default=None, ge=0)


class ListTasksParams(StandardParams):
    contextId: str | None = Field(default=None, max_length=256, description="Only tasks of this context")
    status: str | list[str] | None = Field(
        default=None, description="Only tasks in this state (1.0 `TASK_STATE_*` or 0.3 names)")
    pageSize: int | None = Field(default=None, ge=1, le=100, description="1-100, default 50")
    pageToken: str | None = Field(default=None, max_length=32, description="`nextPageToken` of the previous page")
    statusTimestampAfter: str | None = Field(
        default=None, max_length=64, description="Only tasks whose status changed after this ISO-8601 time")
    historyLength: int | None = Field(default=None, ge=0, description="At most this many messages of history")
    includeArtifacts: bool = Field(default=False, strict=True, description="Include each task's artifacts")


class PushConfigParams(StandardParams):
    pass


class ExtendedCardParams(StandardParams):
    pass
