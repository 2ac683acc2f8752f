"""The prose sections of docs/protocol.md about lifecycles (tasks, streams, plans) and
event subscriptions, built from the code's own tables and limits so the reference
can't drift from them."""

from __future__ import annotations

from cleveragents.app.task_runs import LISTENER_BUFFER
from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.plan import ALLOWED, Profile
from cleveragents.domain.task import TERMINAL_STATES, TRANSITIONS
from cleveragents.infra.store.memory_events import EVENT_LOG_BYTES, EVENT_LOG_SIZE, RECENT_LOGS


def _names(values: object) -> str:
    items = sorted(getattr(v, "value", v) for v in values)  # type: ignore[attr-defined]
    return ", ".join(f"`{v}`" for v in items) or "—"


def task_section() -> list[str]:
    lines = [
        "## Agent task lifecycle",
        "",
        "`SendMessage` / `message/send` starts a task (or resumes one, see below) and, by default, answers "
        "when the task is terminal or needs input. `configuration.returnImmediately: true` (1.0) or "
        "`configuration.blocking: false` (0.3) answers at once with the submitted task. `historyLength` "
        "limits the history in any answer that carries the task.",
        "",
        "| state | may become |",
        "|---|---|",
    ]
    for state, targets in TRANSITIONS.items():
        lines.append(f"| `{state.value}` | {_names(targets)} |")
    lines += [
        "",
        f"- Terminal states ({_names(TERMINAL_STATES)}) never change again. `CancelTask` on a terminal task is "
        "-32002 and leaves it as it was; a result that arrives after a cancel is discarded.",
        "- A failed task carries its reason in `status.message`.",
        "- Multi-turn: a message with the `taskId` of an `input-required` (or `auth-required`) task, or with "
        "the `contextId` of a context that has one, resumes that task; it does not create a new one. A "
        "message to a terminal task is -32004.",
        "- A message whose `contextId` (or `taskId`) is a plan's id answers that plan's gate (see Plans): "
        "it approves the waiting step, or cancels the plan when it starts with no, reject, cancel or stop. "
        "The answer is the plan as a task.",
        "- Tasks that were submitted or working when the server stopped are failed at the next start, with "
        "the reason in `status.message`; input-required tasks keep waiting.",
        "- The store keeps the newest finished tasks (10,000 by default, `--max-terminal-tasks`); older "
        "finished tasks are evicted, live ones never are.",
        "",
        "### Streams",
        "",
        "`SendStreamingMessage` / `message/stream` and `SubscribeToTask` / `tasks/resubscribe` stream the "
        "task: first the task itself, then status and artifact updates, until it is terminal or needs "
        "input.",
        "",
        "- Over stdio, each item is sent as a notification carrying the request's id: `task/artifactUpdate` "
        "for artifact updates and `task/statusUpdate` for the rest, with params `{\"requestId\": <id>, "
        "\"eventId\": <event id>, ...item}`, where the item has the dialect's stream shape (1.0: `{\"task\"}`, "
        "`{\"statusUpdate\"}`, `{\"artifactUpdate\"}`; 0.3: `kind`-tagged, with `final` on status updates). "
        "Then the request answers with the last item. Over HTTP the event id is each SSE event's `id:`.",
        "- Resuming: every item has an event id, a ULID, later for every later item. `SubscribeToTask` with "
        "`lastEventId` (over HTTP, the `Last-Event-ID` header) starts with the items after that one, with "
        f"the same ids, then follows the task. The server keeps the last {EVENT_LOG_SIZE} items of each "
        f"task that was streamed (and no more than about {EVENT_LOG_BYTES // 1024} KiB of their content), "
        f"and of the {RECENT_LOGS} tasks that stopped most recently. An id older "
        "than what it keeps (from before a restart, say), or one that is not a ULID, starts from the task "
        "as it is now, as a stream without an id does. A finished task with `lastEventId` gives the items "
        "that were missed, or the finished task, and the stream ends.",
        "- A task's life is its own, not its stream's: over HTTP, a stream whose connection drops "
        "leaves its task running, within the task's own limits, and `SubscribeToTask` follows it again. "
        "Over stdio the stream belongs to the editor: `$/cancelRequest` on a stream cancels its task, "
        "and when the editor's process goes away (end of input, or `exit`) the server cancels the "
        "tasks still running as it stops. `CancelTask` ends a running stream with a final canceled "
        "status update.",
        "- `SubscribeToTask` on a terminal task, without `lastEventId`, is -32004.",
        f"- A subscriber that falls {LISTENER_BUFFER} items behind is disconnected (its stream ends).",
        "- The agent's reply streams as chunks of an artifact named `response`; the whole reply is also the "
        "agent's message in the history.",
        "- Push notification configs receive the same items, POSTed as JSON in the dialect the config was "
        "created in, with the config's token in `X-A2A-Notification-Token`.",
        "",
    ]
    return lines


def plan_section() -> list[str]:
    policy = GuardPolicy()
    lines = [
        "## Plan lifecycle",
        "",
        "A plan is made from an action (`_cleveragents/registry/action/list`) with `plan/use`. `execute` "
        "runs its steps in the plan's overlay: tools read the overlay over the workspace, and every "
        "write stays in the overlay, so the workspace is not touched. `diff` compares the overlay with "
        "the workspace. `apply` writes it into the workspace, journaled and file by file (temp file and "
        "rename), after checking that no target's content or permission bits changed on disk since "
        "execute; else -32008, unless `force`. The error's `data.conflicts` lists the paths and "
        "`data.conflict_details` says what changed in each: `{\"path\": \"a.sh\", \"changed\": [\"mode\"], "
        "\"expected_mode\": \"0644\", \"found_mode\": \"0755\"}` (`changed` holds `content` and/or `mode`; the "
        "modes are there when the mode changed). `force` writes the plan's content and keeps a mode the "
        "user set, unless the plan set one. The apply keeps the pre-images as a checkpoint, which "
        "`rollback` restores byte for byte (modes included), deleting the files the plan created; "
        "`rollback` refuses a file whose content or mode changed since the apply in the same way. Apply "
        "and rollback never follow a symlink inside the workspace: a directory on a file's path that "
        "became a link since execute is refused (-32003, `reason: symlink_escape`), and one swapped in "
        "while the files are written fails the operation, which is undone (-32008, `data.reason`).",
        "",
        "A plan's position is a `(phase, state)` pair; each position allows these actions "
        "(`status`, `tree`, `explain`, `diff`, `artifacts` and `list` are always allowed). Anything "
        "else is -32004 with `data` naming `phase`, `state` and `allowed_actions`.",
        "",
        "| phase | state | allowed actions |",
        "|---|---|---|",
    ]
    for (phase, state), actions in ALLOWED.items():
        lines.append(f"| `{phase.value}` | `{state.value}` | {_names(actions)} |")
    lines += [
        "",
        "A cancelled plan, in any phase, allows nothing more.",
        "",
        "### Automation profiles",
        "",
        "| profile | gate before execute | gate before apply |",
        "|---|---|---|",
    ]
    for profile in Profile:
        lines.append(f"| `{profile.value}` | {'yes' if profile.gate_before_execute else 'no'} | "
                     f"{'yes' if profile.gate_before_apply else 'no'} |")
    lines += [
        "",
        "A gate puts the plan in `input-required` (with a `task/statusUpdate` event to subscribers). "
        "`plan/execute` or `plan/apply` resumes it, and so does a `message/send` to the plan's context id.",
        "",
        "### Execution",
        "",
        "- Each step is a decision node (`plan/tree`, `plan/explain`): the tool and its arguments, the "
        "rationale, the outcome, what it read and wrote, and timings. `plan/correct` re-runs from a "
        "decision with new arguments or guidance; the decisions from there on are kept, marked "
        "`superseded`, and the new ones branch off. `plan/prompt` queues guidance for the next step of a "
        "running plan.",
        "- `plan/execute` answers when execution ends (`wait: false` answers at once). With a "
        "`workDoneToken` it reports `$/progress` (`begin`, a `report` per step, `end`); "
        "`window/workDoneProgress/cancel` for that token, `$/cancelRequest`, or `plan/cancel` cancels it.",
        "- A step that fails leaves the overlay as it was before the step, and the plan in "
        "`execute/failed`; the call answers with the step's error.",
        "- An apply or rollback, once begun, runs to its end even if its caller goes away. If the process "
        "dies during one, the next start completes it or undoes it from the journal, and the plan's state "
        "and `reason` say which. A plan that was executing comes back as `execute/interrupted`, as it does "
        "when the server stops while it executes (`exit`, end of input, a stop signal).",
        "",
        "### Guards",
        "",
        "Checked on every file the file tools (`fs.*`, `patch.apply`) touch. `shell.run` runs only "
        "allow-listed command prefixes, without a shell and with secret-looking environment variables "
        "removed. It refuses arguments that resolve outside the workspace and options that make the "
        "program run code from its arguments (docs/configuration.md, Actions; -32003, `data.reason`: "
        "`not_allowed`, `path`, `runs_code`, `outside_workspace`). The command then runs in a sandbox "
        "(docs/security.md): on the plan's view of the workspace, without the protected paths, the "
        "network or the user's files; the files it changes become the plan's changes. A change to a "
        "protected path fails the step (-32003, `protected_path`); where no sandbox can be made, "
        "`shell.run` is refused (-32003, `sandbox_unavailable`, `data.missing` names what is missing).",
        "",
        "- Paths stay inside the workspace: no `..` out of it, no absolute path outside it, no symlink "
        "that leads out (-32003, `data.reason`: `outside_workspace`, `absolute_path`, `symlink_escape`).",
        f"- Internal directories are refused for reading and writing: {_names(policy.protected)} at the "
        f"root and {_names(policy.protected_anywhere)} anywhere (-32003, reason `protected`).",
        f"- Protected paths are refused to every tool, commands included: {_names(policy.protected_paths)} "
        "(gitignore patterns), the state directory, and the patterns of `[protected] paths` in the "
        "configuration (-32003, reason `protected_path`).",
        f"- Limits: {policy.max_files_changed} files changed and {policy.max_bytes_written // (1024 * 1024)} "
        f"MiB written per plan, {policy.max_steps} steps (-32006, `data.limit` names it).",
        "",
    ]
    return lines


def events_section() -> list[str]:
    from cleveragents.a2a.events import DEFAULT_CAPACITY, EVENT_GAP
    from cleveragents.a2a.subscriptions import MAX_LIVE_SUBSCRIPTIONS

    return [
        "## Event subscriptions",
        "",
        "`_cleveragents/event/subscribe` opens a subscription, optionally filtered by `plan_id` "
        "and `event_types`.",
        "",
        "- Over stdio the subscription is live: the result has `live: true`, and each event is "
        "pushed as a `_cleveragents/event` notification holding the raw `A2AEvent` (`event_id`, "
        "`event_type`, `plan_id`, `data`, `timestamp`) plus `subscription_id`. Task and plan "
        "events are also sent as `task/statusUpdate` or `task/artifactUpdate`.",
        "- `since=<event_id>` resumes after that event: buffered events after it are replayed "
        "first (`replayed` counts them). `gap: true` means the buffer no longer holds everything "
        "after `since`.",
        "- In process there is no push channel: the result has `live: false`, carries the buffered "
        "`events`, and a `cursor` to pass as `since` on the next poll.",
        "- `_cleveragents/event/unsubscribe` ends a live subscription.",
        f"- The server keeps the last {DEFAULT_CAPACITY} events. A live subscriber that falls further "
        f"behind than that receives an `{EVENT_GAP}` whose `data.missed` says how many events it lost.",
        f"- At most {MAX_LIVE_SUBSCRIPTIONS} subscriptions are live at once; another one is refused "
        "with -32004 until one is closed.",
        "",
    ]


# Free-form values a client sends, with where they sit in params (params itself is level 1).
_FREE_FORM = [
    ("message.metadata", 3, "standard message methods", "metadata"),
    ("message.parts[].metadata", 5, "standard message methods", "metadata"),
    ("message.parts[].data", 5, "standard message methods (a data part, either dialect)", "message"),
    ("metadata", 2, "standard message methods (the request's metadata)", "metadata"),
    ("metadata", 2, "`session.create`", "metadata"),
    ("arguments", 2, "`_cleveragents/plan/use`, `_cleveragents/plan/correct`", "message"),
    ("value", 2, "`_cleveragents/context/set`", "context"),
]


def _kib(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size // 1024} KiB"


def limits_section() -> list[str]:
    from cleveragents.app.context import MAX_VALUE_BYTES
    from cleveragents.domain.json_cost import MAX_PARSE_COST
    from cleveragents.domain.json_limits import MAX_DEPTH, MAX_DEPTH_CEILING, MAX_METADATA_SIZE, MAX_RECORD_DEPTH
    from cleveragents.domain.task import MAX_PARTS
    from cleveragents.transports.lsp.framing import DEFAULT_MAX_MESSAGE_SIZE

    sizes = {"metadata": f"{_kib(MAX_METADATA_SIZE)} each", "message": "the message's",
             "context": _kib(MAX_VALUE_BYTES)}
    lines = [
        "## Limits",
        "",
        f"- A message (a stdio frame, an HTTP body) is at most {_kib(DEFAULT_MAX_MESSAGE_SIZE)} "
        "(`--max-message-size` on stdio); a larger one is refused with -32600. JSON nested deeper than the "
        "parser takes (about a thousand levels) is -32700 (`Parse error: the JSON is nested too deeply`).",
        f"- A message whose values would take more than {_kib(MAX_PARSE_COST)} of memory once parsed is "
        "-32700 with `data.reason` `\"too many values\"`, refused unparsed: `[{},{},...]` takes about 25 "
        "bytes for each byte of text. The bound is counted from the characters that open values "
        "(`domain/json_cost.py`); text that is mostly strings is far below it.",
        f"- In a request's `params`, objects and arrays nest at most {MAX_DEPTH} levels: `params` is level 1, "
        f"`message` level 2, `message.metadata` level 3. This holds for every member, known or not, the "
        "transport's `workDoneToken` too. Past it the answer is -32602 naming the first value too deep: "
        "`data.errors[0]` is `{loc, msg, type: \"too_deep\", limit}` (1.0: the `fieldViolations` of a "
        "`google.rpc.BadRequest`, with the location dotted).",
        f"- Every object held by a member named `metadata` is at most {_kib(MAX_METADATA_SIZE)} of compact "
        "UTF-8 JSON (`type: \"too_large\"` past it).",
        f"- A message holds at most {MAX_PARTS:,} parts; past that it is -32602 naming "
        "`message.parts` (`type: \"too_long\"`), before any part is read.",
        f"- The configuration may set both: `max_json_depth` (8 to {MAX_DEPTH_CEILING}) and "
        "`max_metadata_size` (bytes), in `[defaults]` or as `CLEVERAGENTS_MAX_JSON_DEPTH` and "
        "`CLEVERAGENTS_MAX_METADATA_SIZE` (docs/configuration.md).",
        "",
        "The free-form values, with the default limits:",
        "",
        "| value | in | nests at most | size |",
        "|---|---|---|---|",
    ]
    for field, level, where, size in _FREE_FORM:
        lines.append(f"| `{field}` | {where} | {MAX_DEPTH - level + 1} levels | {sizes[size]} |")
    lines += [
        "",
        f"A stored record is served only when it is JSON, decodes, and nests at most {MAX_RECORD_DEPTH} levels "
        "(more than anything the limits above let in, and less than JSON parsers commonly take). One that "
        "isn't (written by an older version, a bug or by hand) never breaks a list: `ListTasks`, "
        "`session.list`, `_cleveragents/plan/list`, the push config lists, plan trees, artifacts and context "
        "pins skip it, and a page still fills from the records after it. The server logs a warning once per "
        "record, and `_cleveragents/diagnostics/run` reports it in the `store` check (status `warning`, "
        "`unreadable: [{store, id, reason}]`). Read alone (`GetTask`, `session.get`, `_cleveragents/plan/status`, "
        "...) it is -32001 with `data: {store, id, reason}` (1.0 ErrorInfo reason `RECORD_UNREADABLE`; REST "
        "500 `DATA_LOSS`). Counts (`totalSize`, `total`) include such records.",
        "",
    ]
    return lines


def card_section() -> list[str]:
    """The agent card: what turns methods off, the extended card, and where the card and
    the method names follow the A2A specification over other descriptions."""
    from cleveragents.a2a import dialects, methods
    from cleveragents.a2a.capabilities import EXTENSION_URI
    from cleveragents.a2a.cards import API_KEY_SCHEME, BEARER_SCHEME

    def gated(capability: str) -> str:
        return ", ".join(f"`{s.name}`" for s in methods.METHODS.values()
                         if s.capability == capability and s.dialect in dialects.STANDARD)

    return [
        "## Agent card",
        "",
        "The card (served over HTTP at `/.well-known/agent-card.json` and `/.well-known/agent.json`, and sent "
        "over stdio in the `initialize` answer) says what the agent offers, and the server holds to it:",
        "",
        f"- `capabilities.streaming: false`: {gated(methods.STREAMING)} answer -32004 "
        "(`UNSUPPORTED_OPERATION`, `data: {method, capability}`).",
        f"- `capabilities.pushNotifications: false`: {gated(methods.PUSH_NOTIFICATIONS)} answer -32003 "
        "(`PUSH_NOTIFICATION_NOT_SUPPORTED`).",
        "- Over stdio, the `initialize` answer's method lists leave out the methods the card turns off.",
        f"- The security schemes are named `{BEARER_SCHEME}` (an HTTP bearer token) and `{API_KEY_SCHEME}` "
        "(an API key in a header); error data names the same schemes.",
        f"- The extended card (`GetExtendedAgentCard`) adds, for authenticated callers, the skills kept off "
        f"the public card and, in the `params` of the `{EXTENSION_URI}` extension: `methodNames` (every "
        "method by dialect: `1.0`, `0.3`, `extension`, `deprecated`), `actors` and `limits`. A published "
        "agent's `extended_agent_card_callback` may change it further. Over HTTP+JSON it is sent with "
        "`Cache-Control: private` and `Vary: Authorization` (and the API key header when API keys are "
        "configured): it depends on the credential.",
        "",
        "### Where the A2A specification decides",
        "",
        "Some descriptions of A2A servers show shapes that the A2A specification does not have. The "
        "backend follows the specification, and accepts the other forms where that harms no client:",
        "",
        "- `provider` is an `AgentProvider`: `{organization, url}`, both required (not `{name}`).",
        "- `skills` are `AgentSkill` objects (`id`, `name`, `description`, `tags`, `examples`), never bare "
        "ids: the backend's are `plan-lifecycle`, `registry-crud` and `context-management`.",
        "- An `AgentExtension` has `uri`, `description`, `required` and `params` only, and a strict ProtoJSON "
        "reader refuses a card with any other member. So the extension's method globs "
        "(`_cleveragents/plan/*`, ...) are in `params.methods`, not in a `methods` member of their own.",
        "- `capabilities.stateTransitionHistory` is not in A2A 1.0's `AgentCapabilities`: it is never sent.",
        "- The push notification config methods are `tasks/pushNotificationConfig/*` (0.3) and "
        "`*TaskPushNotificationConfig*` (1.0); `pushNotificationConfig/set`, `/get`, `/list` and `/delete` "
        "are accepted as 0.3 aliases. `agent/getExtendedCard` and `getExtendedAgentCard` are likewise aliases "
        "of `agent/getAuthenticatedExtendedCard`.",
        "- A task that was canceled is `canceled` (0.3) or `TASK_STATE_CANCELED` (1.0), never `cancelled`.",
        "- A JSON-RPC error's `data` is an object in the 0.3 and extension dialects and, in the 1.0 "
        "dialect, a list of error details (`google.rpc.ErrorInfo`, ...). `A2AErrorDetail.data` is `{}` when "
        "there is none, and is then left off the wire.",
        "",
    ]
