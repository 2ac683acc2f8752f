"""The method table: every method the backend answers, as data.

Each entry names its params model (in ``params.py``), the service key and the call
that serve it, its dialect, what it returns and the errors it raises. The facade
dispatches from it; ``docs/protocol.md`` and the stdio server's capabilities are
generated from it. Entries refer to models and handlers by name so that reading the
table imports nothing heavy (the stdio server reads it before answering
``initialize``); ``bindings.py``, loaded with the services, binds each
``(service, call)`` to its params type and a typed handler.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cleveragents.a2a.dialects import A2A_V03, A2A_V1, EXTENSION, LEGACY


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    dialect: str
    params: str
    service: str
    call: str
    summary: str
    result: str = ""
    errors: tuple[str, ...] = ()
    example: dict[str, Any] = field(default_factory=dict)
    replaced_by: str | None = None
    # The handler answers with an async iterator of StreamItems (``a2a/streams.py``).
    streaming: bool = False
    # The param a reconnecting client's resume point goes in (HTTP: ``Last-Event-ID``).
    resume_param: str | None = None
    # Over HTTP the call is cancelled when its client goes away before the answer.
    ends_with_client: bool = False
    # The handler also receives the caller's context (notification sink, progress).
    with_context: bool = False
    # It may change files through the caller's editor (``CallContext.editor``, LSP
    # ``workspace/applyEdit``): over stdio it waits for the LSP layer to load.
    uses_editor: bool = False
    # Its answer can run to megabytes (a diff, pinned files, tasks' artifacts): the facade
    # encodes it in a worker thread, a piece at a time (bulk_json), not on the event loop.
    bulk: bool = False
    # The agent card capability it needs (``STREAMING``, ``PUSH_NOTIFICATIONS``): an agent
    # whose card turns it off answers the method with an error, and does not list it.
    capability: str | None = None

    @property
    def deprecated(self) -> bool:
        return self.replaced_by is not None


STREAMING = "streaming"
PUSH_NOTIFICATIONS = "pushNotifications"

_NOT_FOUND = ("ResourceNotFoundError",)
_PLAN_STATE = ("ResourceNotFoundError", "BusinessRuleViolation")
_ULID = "01JEXAMP1E0000000000000000"  # a valid ULID (no I, L, O or U)

_TABLE: list[MethodSpec] = []


def _add(*specs: MethodSpec) -> None:
    _TABLE.extend(specs)


def _standard(v1: str, v03: tuple[str, ...], params: str, call: str, summary: str, result: str,
              errors: tuple[str, ...] = (), example: dict[str, Any] | None = None,
              streaming: bool = False, service: str = "task_service", bulk: bool = False,
              resume_param: str | None = None, ends_with_client: bool = False,
              capability: str | None = None) -> None:
    base = MethodSpec(v1, A2A_V1, params, service, call, summary, result, errors,
                      example or {}, streaming=streaming, with_context=True, bulk=bulk,
                      resume_param=resume_param, ends_with_client=ends_with_client,
                      capability=capability or (STREAMING if streaming else None))
    _add(base, *(replace(base, name=name, dialect=A2A_V03) for name in v03))


def _ext(name: str, params: str, service: str, call: str, summary: str, result: str,
         errors: tuple[str, ...] = (), example: dict[str, Any] | None = None,
         with_context: bool = False, bulk: bool = False, resume_param: str | None = None,
         uses_editor: bool = False) -> None:
    _add(MethodSpec(name, EXTENSION, params, service, call, summary, result, errors,
                    example or {}, with_context=with_context or uses_editor, bulk=bulk, resume_param=resume_param,
                    uses_editor=uses_editor))


# --- Standard A2A methods: the 1.0 name, then its 0.3 and older names ----------------
_message = {"message": {"role": "ROLE_USER", "messageId": _ULID, "parts": [{"text": "fs.search TODO"}]}}
_standard("SendMessage", ("message/send",), "SendMessageParams", "send",
          "Send a message to the agent; returns the task (or a direct message).",
          "Task or Message", ("ValidationError", "TaskNotFoundError"), _message, bulk=True,
          ends_with_client=True)
_standard("SendStreamingMessage", ("message/stream",), "SendMessageParams", "stream",
          "Send a message and stream the task's updates.",
          "Stream of Task / Message / status and artifact updates", ("ValidationError", "UnsupportedOperationError"),
          _message, streaming=True)
_standard("GetTask", ("tasks/get",), "GetTaskParams", "get",
          "Get a task with up to historyLength messages of history.", "Task",
          ("TaskNotFoundError",), {"id": _ULID, "historyLength": 10}, bulk=True)
_standard("ListTasks", ("tasks/list",), "ListTasksParams", "list",
          "List tasks, newest first, with cursor pagination.",
          "{tasks, nextPageToken, pageSize, totalSize}", (), {"pageSize": 20}, bulk=True)
_standard("CancelTask", ("tasks/cancel",), "TaskIdParams", "cancel",
          "Cancel a running task.", "Task", ("TaskNotFoundError", "TaskNotCancelableError"),
          {"id": _ULID})
_standard("SubscribeToTask", ("tasks/resubscribe", "tasks/subscribe"), "SubscribeToTaskParams", "subscribe",
          "Stream the updates of a task that is still running, or resume a stream after its last event seen.",
          "Stream of status and artifact updates",
          ("TaskNotFoundError", "BusinessRuleViolation", "UnsupportedOperationError"), {"id": _ULID}, streaming=True,
          resume_param="lastEventId")
_standard("CreateTaskPushNotificationConfig", ("tasks/pushNotificationConfig/set", "pushNotificationConfig/set"),
          "PushConfigParams", "create_push_config", "Register a webhook for a task's updates.",
          "TaskPushNotificationConfig", ("TaskNotFoundError", "PushNotificationNotSupportedError"),
          {"taskId": _ULID, "url": "https://example.invalid/hook", "token": "secret"}, capability=PUSH_NOTIFICATIONS)
_standard("GetTaskPushNotificationConfig", ("tasks/pushNotificationConfig/get", "pushNotificationConfig/get"),
          "PushConfigParams", "get_push_config", "Get one push notification config.",
          "TaskPushNotificationConfig", ("TaskNotFoundError", "PushNotificationNotSupportedError"),
          {"taskId": _ULID, "id": _ULID}, capability=PUSH_NOTIFICATIONS)
_standard("ListTaskPushNotificationConfigs", ("tasks/pushNotificationConfig/list", "pushNotificationConfig/list"),
          "PushConfigParams", "list_push_configs", "List a task's push notification configs.",
          "{configs, nextPageToken}", ("TaskNotFoundError", "PushNotificationNotSupportedError"),
          {"taskId": _ULID}, capability=PUSH_NOTIFICATIONS)
_standard("DeleteTaskPushNotificationConfig", ("tasks/pushNotificationConfig/delete", "pushNotificationConfig/delete"),
          "PushConfigParams", "delete_push_config",
          "Delete a push notification config (idempotent).", "{}",
          ("TaskNotFoundError", "PushNotificationNotSupportedError"), {"taskId": _ULID, "id": _ULID},
          capability=PUSH_NOTIFICATIONS)
_standard("GetExtendedAgentCard",
          ("agent/getAuthenticatedExtendedCard", "agent/getExtendedCard", "getExtendedAgentCard"),
          "ExtendedCardParams", "extended_card", "The agent card with authenticated-only detail.",
          "AgentCard", ("ExtendedAgentCardNotConfiguredError", "AuthenticationError"),
          service="agent_card_service")

# --- Sessions (dotted names, not deprecated) -----------------------------------------
_ext("session.create", "SessionCreateParams", "session_service", "create",
     "Create a session for an actor; idempotent when session_id is given.",
     "{session_id, status: created|active|closed, actor_name, created_at}",
     ("ValidationError", "DuplicateEntityError"), {"actor_name": "local/default"})
_ext("session.close", "SessionIdParams", "session_service", "close",
     "Close a session (closing a closed session is a no-op).", "{session_id, status: closed}",
     _NOT_FOUND, {"session_id": _ULID})
_ext("session.delete", "SessionIdParams", "session_service", "delete",
     "Delete a session and its conversation (its context's tasks); refused while a task runs in it.",
     "{session_id, deleted: true, tasks_deleted}", ("ResourceNotFoundError", "BusinessRuleViolation"),
     {"session_id": _ULID})
_ext("session.get", "SessionIdParams", "session_service", "get", "One session.",
     "Session", _NOT_FOUND, {"session_id": _ULID})
_ext("session.update", "SessionUpdateParams", "session_service", "update",
     "Set or remove keys of a session's metadata; the other keys are kept. `budget` is set at creation only.",
     "Session", _NOT_FOUND + ("ValidationError",),
     {"session_id": _ULID, "metadata": {"title": "Refactor the parser"}})
_ext("session.list", "SessionListParams", "session_service", "list",
     "Sessions, newest first, with cursor pagination.", "{sessions, next_cursor}", (),
     {"status": "active", "limit": 20})

# --- Plans ---------------------------------------------------------------------------
_PLAN = "plan_lifecycle_service"
_ext("_cleveragents/plan/use", "PlanUseParams", _PLAN, "use", "Create a plan from an action template.",
     "{plan_id, phase, state}", ("ResourceNotFoundError", "ValidationError"),
     {"action_name": "replace", "arguments": {"pattern": "foo", "replacement": "bar", "glob": "**/*.py"}})
_ext("_cleveragents/plan/execute", "PlanExecuteParams", _PLAN, "execute",
     "Run the plan's steps in its overlay (the workspace is not touched).",
     "{plan_id, phase, state}", _PLAN_STATE + ("BudgetExceededError", "AuthorizationError"),
     {"plan_id": _ULID}, with_context=True)
_ext("_cleveragents/plan/apply", "PlanApplyParams", _PLAN, "apply",
     "Write the overlay into the workspace, journaled, with a checkpoint (through the editor when it "
     "declared `workspace.applyEdit`).",
     "{plan_id, phase, state, files, written_by: server|editor}", _PLAN_STATE + ("PlanError",), {"plan_id": _ULID},
     uses_editor=True)
_ext("_cleveragents/plan/cancel", "PlanIdParams", _PLAN, "cancel", "Cancel a running plan.",
     "{plan_id, phase, state}", _PLAN_STATE, {"plan_id": _ULID})
_ext("_cleveragents/plan/status", "PlanIdParams", _PLAN, "status", "A plan's phase and state.",
     "{plan_id, phase, state}", _NOT_FOUND, {"plan_id": _ULID})
_ext("_cleveragents/plan/tree", "PlanIdParams", _PLAN, "tree", "The plan's decision tree.",
     "{plan_id, decisions}", _NOT_FOUND, {"plan_id": _ULID})
_ext("_cleveragents/plan/explain", "PlanExplainParams", _PLAN, "explain", "One decision in full.",
     "Decision", _NOT_FOUND, {"plan_id": _ULID, "decision_id": _ULID})
_ext("_cleveragents/plan/correct", "PlanCorrectParams", _PLAN, "correct",
     "Correct a decision (new arguments or guidance) and re-execute from there.",
     "{plan_id, phase, state}", _PLAN_STATE, {"plan_id": _ULID, "guidance": "Use dependency injection"},
     with_context=True)
_ext("_cleveragents/plan/diff", "PlanIdParams", _PLAN, "diff",
     "The overlay against the workspace: a unified diff and per-file hunks.",
     "{plan_id, diff, files}", _PLAN_STATE, {"plan_id": _ULID}, with_context=True, bulk=True)
_ext("_cleveragents/plan/artifacts", "PlanIdParams", _PLAN, "artifacts", "The plan's artifacts.",
     "{plan_id, artifacts}", _NOT_FOUND, {"plan_id": _ULID}, bulk=True)
_ext("_cleveragents/plan/prompt", "PlanPromptParams", _PLAN, "prompt",
     "Queue guidance for the next steps of a running plan.", "{plan_id, queued}", _PLAN_STATE,
     {"plan_id": _ULID, "guidance": "Keep the public API unchanged"})
_ext("_cleveragents/plan/rollback", "PlanRollbackParams", _PLAN, "rollback",
     "Restore the workspace from the plan's checkpoint (through the editor when it declared `workspace.applyEdit`).",
     "{plan_id, phase, state, files, written_by: server|editor}", _PLAN_STATE, {"plan_id": _ULID},
     uses_editor=True)
_ext("_cleveragents/plan/list", "PlanListParams", _PLAN, "list", "Plans, newest first.",
     "{plans, next_cursor}", (), {"limit": 20})

# --- Registries ----------------------------------------------------------------------
_ext("_cleveragents/registry/tool/list", "ToolListParams", "tool_registry", "list_tools",
     "Tools with their JSON schemas, optionally in one namespace.", "{tools}", (), {"namespace": "fs"})
_ext("_cleveragents/registry/resource/list", "ResourceListParams", "resource_registry_service",
     "list_resources", "Resources: the workspace (type `workspace`) and those the configuration declares, "
     "by name, optionally of one type.",
     "{resources: [{name, type_name, uri, description, source}], next_cursor}", ("ValidationError",),
     {"type_name": "repository", "limit": 20})
_ext("_cleveragents/registry/actor/list", "PageParams", "registry_service", "list_actors",
     "Actors: those the configuration declares, the default actor, and each provider with its "
     "naming syntax (kind `declared`, `default`, `provider`).",
     "{actors: [{name, kind, provider, model, description, default, source, settings}], next_cursor}",
     ("ValidationError",), {"limit": 20})
_ext("_cleveragents/registry/skill/list", "PageParams", "registry_service", "list_skills",
     "Skills: a published agent's card skills (kind `agent`), then the backend's tools (`tool`) "
     "and actions (`action`).",
     "{skills: [{id, name, description, kind, tags, examples}], next_cursor}", ("ValidationError",),
     {"limit": 20})
_ext("_cleveragents/registry/action/list", "EmptyParams", "registry_service", "list_actions",
     "Actions: the plan templates, built-in and the workspace's, with the problems of bad action files.",
     "{actions, problems}")
_ext("_cleveragents/registry/project/list", "PageParams", "registry_service", "list_projects",
     "Projects: the current workspace (`current: true`) and those the configuration declares.",
     "{projects: [{name, path, description, current, source}], next_cursor}", ("ValidationError",),
     {"limit": 20})

# --- Context -------------------------------------------------------------------------
_CONTEXT_ERRORS = ("ResourceNotFoundError", "ValidationError")
_ext("_cleveragents/context/show", "ContextScopeParams", "context_service", "show",
     "The context an actor would get for a session or a plan, assembled in tiers: pinned files "
     "and values, the plan's decisions, the session's history.",
     "{scope, tiers, size_chars, tokens}", _CONTEXT_ERRORS, {"session_id": _ULID}, bulk=True)
_ext("_cleveragents/context/inspect", "ContextScopeParams", "context_service", "inspect",
     "The context's tiers with size estimates, without their content.",
     "{scope, tiers, size_chars, tokens}", _CONTEXT_ERRORS, {"session_id": _ULID})
_ext("_cleveragents/context/simulate", "ContextSimulateParams", "context_service", "simulate",
     "What a given token budget would keep and drop, in tier priority order.",
     "{budget, kept, dropped, kept_tokens, dropped_tokens}", _CONTEXT_ERRORS,
     {"session_id": _ULID, "budget": 8000})
_ext("_cleveragents/context/set", "ContextSetParams", "context_service", "set",
     "Pin a file (`file:<path>`) or a value into the context; a null value unpins.",
     "{key, pinned, scope}", _CONTEXT_ERRORS + ("AuthorizationError", "BudgetExceededError"),
     {"session_id": _ULID, "key": "file:src/app.py", "value": True})

# --- Health & diagnostics ------------------------------------------------------------
_ext("_cleveragents/health/check", "EmptyParams", "health_service", "check",
     "Liveness: version, uptime and whether the store answers.",
     "{status, version, uptime_seconds, started_at, store}")
_ext("_cleveragents/diagnostics/run", "DiagnosticsRunParams", "health_service", "diagnostics",
     "Check the store, the workspace and the configured actors; report each result.",
     "{status, checks: [{name, status, detail, duration_ms}]}", ("ValidationError",),
     {"checks": ["store", "workspace"]})

# --- Sync & namespaces ---------------------------------------------------------------
for _verb in ("pull", "push", "status"):
    _ext(f"_cleveragents/sync/{_verb}", "SyncParams", "sync_service", _verb,
         f"Sync {_verb} with a remote CleverAgents server.", "{status}")
_ext("_cleveragents/namespace/list", "EmptyParams", "namespace_service", "list", "Namespaces.",
     "{namespaces}")
_ext("_cleveragents/namespace/show", "NamespaceParams", "namespace_service", "show",
     "One namespace.", "Namespace", _NOT_FOUND, {"namespace": "team"})
_ext("_cleveragents/namespace/members", "NamespaceParams", "namespace_service", "members",
     "A namespace's members.", "{members}", _NOT_FOUND, {"namespace": "team"})

# --- Events --------------------------------------------------------------------------
# What a transport serves as a plain event feed, with no JSON-RPC request (HTTP's GET /events).
EVENT_FEED = "_cleveragents/event/subscribe"
_ext(EVENT_FEED, "EventSubscribeParams", "event_queue", "subscribe",
     "Subscribe to events, optionally for one plan, resuming after `since`. On stdio the events "
     "arrive as `_cleveragents/event` (and `task/statusUpdate`, `task/artifactUpdate`) "
     "notifications; in process the buffered events are returned.",
     "{subscription_id, live, cursor, replayed, gap, events?}", ("ValidationError", "BusinessRuleViolation"),
     {"plan_id": None, "since": _ULID}, with_context=True, resume_param="since")
_ext("_cleveragents/event/unsubscribe", "EventUnsubscribeParams", "event_queue", "unsubscribe",
     "End a subscription.", "{subscription_id, status: closed}", _NOT_FOUND,
     {"subscription_id": _ULID}, with_context=True)

# --- Legacy dotted names (deprecated aliases) ----------------------------------------
_LEGACY = {
    "plan.create": "_cleveragents/plan/use",
    "plan.execute": "_cleveragents/plan/execute",
    "plan.status": "_cleveragents/plan/status",
    "plan.diff": "_cleveragents/plan/diff",
    "plan.apply": "_cleveragents/plan/apply",
    "registry.list_tools": "_cleveragents/registry/tool/list",
    "registry.list_resources": "_cleveragents/registry/resource/list",
    "context.get": "_cleveragents/context/show",
    "event.subscribe": "_cleveragents/event/subscribe",
}
_by_name = {spec.name: spec for spec in _TABLE}
_add(*(replace(_by_name[new], name=old, dialect=LEGACY, replaced_by=new) for old, new in _LEGACY.items()))

METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in _TABLE}
if len(METHODS) != len(_TABLE):  # pragma: no cover - a duplicate name is a bug in this file
    raise RuntimeError("duplicate method name in the method table")

del _by_name, _verb


def get(name: str) -> MethodSpec | None:
    return METHODS.get(name)


# The services every ``Container`` builds (its ``services``). Sync and namespaces have
# none built in: their methods answer -32004, so the servers must not advertise them.
BUILT_IN_SERVICES: frozenset[str] = frozenset({
    "session_service", "health_service", "event_queue", "task_service", "plan_lifecycle_service",
    "tool_registry", "registry_service", "resource_registry_service", "agent_card_service",
    "context_service",
})


def extension_method_names(services: Collection[str] = BUILT_IN_SERVICES) -> list[str]:
    """What the agent card's `urn:cleveragents:extensions:v1` extension lists: the
    extension methods ``services`` serve."""
    return names_by_dialect(EXTENSION, services)


def names_by_dialect(dialect: str, services: Collection[str] = BUILT_IN_SERVICES,
                     capabilities: Mapping[str, Any] | None = None) -> list[str]:
    """The methods of ``dialect`` that ``services`` serve, less those needing a
    capability that ``capabilities`` (a card's) turns off."""
    return [s.name for s in METHODS.values() if s.dialect == dialect and s.service in services
            and enabled(s, capabilities)]


def enabled(spec: MethodSpec, capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a card's ``capabilities`` allow the method (no card: all do)."""
    return spec.capability is None or capabilities is None or capabilities.get(spec.capability) is not False


def extension_method_globs(services: Collection[str] = BUILT_IN_SERVICES) -> list[str]:
    """The extension methods ``services`` serve, a glob per family (``*`` stands for the
    rest of the name): ``session.*``, ``_cleveragents/plan/*``, ..."""
    globs = ("/".join(name.split("/")[:2]) + "/*" if "/" in name else name.partition(".")[0] + ".*"
             for name in extension_method_names(services))
    return list(dict.fromkeys(globs))
