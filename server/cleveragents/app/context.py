"""ContextService: what an actor would know, assembled as tiers a user can see and steer.

Tiers, in priority order: ``pinned`` (files and values pinned with ``set``),
``decisions`` (a plan's steps so far) and ``history`` (the session's conversation,
which by convention is the A2A context named by the session id). Sizes are estimates
(about four characters a token), so ``simulate`` shows what a budget would keep
before any actor runs.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any, Protocol

from cleveragents.app.plan_ports import PlanRepository
from cleveragents.app.ports import PinRepository, SessionRepository, TaskRepository
from cleveragents.domain.errors import (
    BudgetExceededError,
    ResourceNotFoundError,
    StructuredError,
    ValidationError,
)
from cleveragents.domain.plan import Plan
from cleveragents.domain.plan_files import OverlayRecord
from cleveragents.domain.task import Message, Task
from cleveragents.domain.tools import WorkspaceView

PINNED, DECISIONS, HISTORY = "pinned", "decisions", "history"
FILE_PREFIX = "file:"
CHARS_PER_TOKEN = 4
MAX_KEY_CHARS = 500
MAX_VALUE_BYTES = 64 * 1024
# A pinned file travels whole in every `show`: keep one from swamping the response.
MAX_FILE_BYTES = 1024 * 1024
HISTORY_LIMIT = 200
HISTORY_PAGE = 50
# Every task holds at least one message, so this many pages always reach the limit.
HISTORY_PAGES = math.ceil(HISTORY_LIMIT / HISTORY_PAGE)
MAX_FORK_DEPTH = 16  # a fork of a fork ...: how far up its conversation reaches


class GuardedFiles(Protocol):
    """The part of ``app.workspace.PlanWorkspace`` the context reads files through."""

    def overlay(self, records: list[OverlayRecord] | None = None) -> WorkspaceView: ...


def estimate_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True, slots=True)
class _Scope:
    session_id: str | None
    plan: Plan | None

    @property
    def store_key(self) -> str:
        """Where ``set`` pins: the plan when the scope is a plan."""
        return f"plan:{self.plan.plan_id}" if self.plan is not None else f"session:{self.session_id}"

    def pin_sources(self) -> list[tuple[str, str]]:
        """(store scope, label), most specific first: a plan's pin shadows its session's."""
        sources = [("plan:" + self.plan.plan_id, "plan")] if self.plan is not None else []
        if self.session_id is not None:
            sources.append(("session:" + self.session_id, "session"))
        return sources

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "plan_id": self.plan.plan_id if self.plan else None}


class ContextService:
    def __init__(self, sessions: SessionRepository, plans: PlanRepository, tasks: TaskRepository,
                 pins: PinRepository, workspace: GuardedFiles):
        self._sessions = sessions
        self._plans = plans
        self._tasks = tasks
        self._pins = pins
        self._workspace = workspace

    # -- reading -------------------------------------------------------------------
    async def show(self, session_id: str | None = None, plan_id: str | None = None) -> dict[str, Any]:
        """The assembled context: every tier with its items' content."""
        scope = await self._resolve(session_id, plan_id)
        tiers = await self._tiers(scope)
        return {"scope": scope.to_dict(), "tiers": tiers, **_totals(tiers)}

    async def inspect(self, session_id: str | None = None, plan_id: str | None = None) -> dict[str, Any]:
        """Like ``show``, with sizes but no content."""
        shown = await self.show(session_id, plan_id)
        for tier in shown["tiers"]:
            tier["items"] = [{k: v for k, v in item.items() if k != "content"} for item in tier["items"]]
        return shown

    async def simulate(self, budget: int, session_id: str | None = None,
                       plan_id: str | None = None) -> dict[str, Any]:
        """What ``budget`` tokens would keep: items in priority order (pinned, decisions
        oldest first, history newest first) until the first that no longer fits; it and
        every later item are dropped, so nothing kept outranks something dropped."""
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise _invalid("budget", "the budget is a whole number of tokens, 0 or more", "greater_than_equal")
        scope = await self._resolve(session_id, plan_id)
        pinned, decisions, history = (tier["items"] for tier in await self._tiers(scope))
        kept: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        used = 0
        for item in [*pinned, *decisions, *reversed(history)]:
            entry = {"tier": item["tier"], "key": item["key"], "tokens": item["tokens"]}
            if not dropped and used + item["tokens"] <= budget:
                kept.append(entry)
                used += item["tokens"]
            else:
                dropped.append(entry)
        return {"budget": budget, "kept": kept, "dropped": dropped, "kept_tokens": used,
                "dropped_tokens": sum(entry["tokens"] for entry in dropped)}

    # -- pinning -------------------------------------------------------------------
    async def set(self, key: str, value: Any = None, session_id: str | None = None,
                  plan_id: str | None = None) -> dict[str, Any]:
        """Pin ``value`` under ``key`` (``None`` unpins). A ``file:<path>`` key pins the
        file, whose text is read each time the context is assembled; its value only
        has to be something other than ``None`` (``true`` by convention)."""
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS:
            raise _invalid("key", f"a pin key has 1 to {MAX_KEY_CHARS} characters", "string_length",
                           limit=MAX_KEY_CHARS)
        _check_scope_args(session_id, plan_id)
        is_file = key.startswith(FILE_PREFIX)
        if value is not None and not is_file:
            _check_value(value)
        scope = await self._resolve(session_id, plan_id)
        if value is None:
            await self._pins.delete_pin(scope.store_key, key)
            return {"key": key, "pinned": False}
        if is_file:
            path = key[len(FILE_PREFIX):]
            records = await self._overlay_records(scope)
            await asyncio.to_thread(self._read_one, path, records)  # raises when it can't be read now
            value = {"file": path}
        await self._pins.set_pin(scope.store_key, key, value)
        return {"key": key, "pinned": True, "scope": scope.to_dict()}

    # -- assembly ------------------------------------------------------------------
    async def _resolve(self, session_id: str | None, plan_id: str | None) -> _Scope:
        _check_scope_args(session_id, plan_id)
        if plan_id is not None:
            plan = await self._plans.get_plan(plan_id)
            if plan is None:
                raise ResourceNotFoundError("Plan not found", {"plan_id": plan_id})
            return _Scope(plan.session_id, plan)
        assert session_id is not None
        if await self._sessions.get_session(session_id) is None:
            raise ResourceNotFoundError("Session not found", {"session_id": session_id})
        return _Scope(session_id, None)

    async def _tiers(self, scope: _Scope) -> list[dict[str, Any]]:
        pinned = await self._pinned(scope)
        decisions = await self._decisions(scope.plan) if scope.plan is not None else []
        history = await self._history(scope.session_id) if scope.session_id is not None else []
        return [_tier(PINNED, pinned), _tier(DECISIONS, decisions), _tier(HISTORY, history)]

    async def _pinned(self, scope: _Scope) -> list[dict[str, Any]]:
        pins: dict[str, tuple[Any, str]] = {}
        for store_key, label in scope.pin_sources():
            for key, value in await self._pins.list_pins(store_key):
                pins.setdefault(key, (value, label))
        paths = [key[len(FILE_PREFIX):] for key in pins if key.startswith(FILE_PREFIX)]
        texts: dict[str, str | StructuredError] = {}
        if paths:
            texts = await asyncio.to_thread(self._read_many, paths, await self._overlay_records(scope))
        items = []
        for key, (value, label) in pins.items():
            if not key.startswith(FILE_PREFIX):
                items.append(_item(PINNED, key, "value", value, pinned_in=label))
            elif isinstance(text := texts[key[len(FILE_PREFIX):]], str):
                items.append(_item(PINNED, key, "file", text, pinned_in=label))
            else:
                error = {"type": type(text).__name__, "message": text.message, "data": text.data}
                items.append(_item(PINNED, key, "file", None, pinned_in=label, error=error))
        return items

    async def _decisions(self, plan: Plan) -> list[dict[str, Any]]:
        return [
            _item(DECISIONS, d.decision_id, "decision", {
                "tool": d.tool, "arguments": d.arguments, "rationale": d.rationale,
                "outcome": d.outcome, "summary": d.summary,
            })
            for d in await self._plans.list_decisions(plan.plan_id) if d.outcome != "superseded"
        ]

    async def _history(self, session_id: str) -> list[dict[str, Any]]:
        """The last ``HISTORY_LIMIT`` messages of the session's context, oldest first. A
        fork's conversation goes on from its parent's (up to the fork), and so on up."""
        newest_first: list[tuple[Task, Message]] = []
        source: tuple[str, str | None] | None = (session_id, None)
        for _ in range(MAX_FORK_DEPTH + 1):
            if source is None or len(newest_first) >= HISTORY_LIMIT:
                break
            newest_first += await self._messages(*source)
            session = await self._sessions.get_session(source[0])
            source = session.forked_from if session is not None else None
        return [
            _item(HISTORY, message.message_id, "message", _message_text(message),
                  role=message.role.value, task_id=task.id)
            for task, message in reversed(newest_first[:HISTORY_LIMIT])
        ]

    async def _messages(self, context_id: str, before_id: str | None) -> list[tuple[Task, Message]]:
        """Up to ``HISTORY_LIMIT`` messages of a context, newest first; with ``before_id``
        only those of tasks whose ids sort before it."""
        newest_first: list[tuple[Task, Message]] = []
        before: int | None = None
        for _ in range(HISTORY_PAGES):
            rows = await self._tasks.list_tasks(context_id=context_id, limit=HISTORY_PAGE, before=before)
            for _, task in rows:
                if before_id is None or task.id < before_id:
                    newest_first.extend((task, message) for message in reversed(task.history))
            if len(newest_first) >= HISTORY_LIMIT or len(rows) < HISTORY_PAGE:
                break
            before = rows[-1][0]
        return newest_first

    async def _overlay_records(self, scope: _Scope) -> list[OverlayRecord] | None:
        """A plan's files are read as the plan sees them: its overlay over the workspace."""
        return await self._plans.load_overlay(scope.plan.plan_id) if scope.plan is not None else None

    # -- file reads (worker thread) ------------------------------------------------
    def _read_one(self, path: str, records: list[OverlayRecord] | None) -> str:
        return _read_text(self._workspace.overlay(records), path)

    def _read_many(self, paths: list[str], records: list[OverlayRecord] | None) -> dict[str, str | StructuredError]:
        view = self._workspace.overlay(records)
        texts: dict[str, str | StructuredError] = {}
        for path in paths:
            try:
                texts[path] = _read_text(view, path)
            except StructuredError as exc:  # shown on the item: one bad pin hides nothing else
                texts[path] = exc
        return texts


def _read_text(view: WorkspaceView, path: str) -> str:
    """The file's text through the guarded view (``AuthorizationError`` when refused)."""
    try:
        data = view.read_bytes(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ResourceNotFoundError("File not found", {"path": path, "reason": "not_found"}) from None
    except OSError:
        raise ResourceNotFoundError("File not readable", {"path": path, "reason": "unreadable"}) from None
    if len(data) > MAX_FILE_BYTES:
        raise BudgetExceededError("File too large to pin", {
            "path": path, "reason": "too_large", "limit": MAX_FILE_BYTES, "size": len(data)})
    return data.decode("utf-8", errors="replace")


def _message_text(message: Message) -> str:
    texts = []
    for part in message.parts:
        if part.text is not None:
            texts.append(part.text)
        elif part.has_data:
            texts.append(_json(part.data))
        else:
            name = part.filename or part.url or part.media_type
            texts.append(f"[file {name}]" if name else "[file]")
    return "\n".join(texts)


def _item(tier: str, key: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    chars = 0 if content is None else len(content) if isinstance(content, str) else len(_json(content))
    return {"tier": tier, "key": key, "kind": kind, "size_chars": chars, "tokens": estimate_tokens(chars),
            "content": content, **extra}


def _tier(name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "items": items, **_totals(items)}


def _totals(parts: list[dict[str, Any]]) -> dict[str, int]:
    # Tokens add up per item, so a tier's total is what simulate counts for it.
    return {"size_chars": sum(p["size_chars"] for p in parts), "tokens": sum(p["tokens"] for p in parts)}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _check_scope_args(session_id: str | None, plan_id: str | None) -> None:
    if (session_id is None) == (plan_id is None):
        msg = "give exactly one of session_id and plan_id"
        raise ValidationError(f"Invalid params: {msg}", {"errors": [
            {"loc": ["session_id"], "msg": msg, "type": "value_error"},
            {"loc": ["plan_id"], "msg": msg, "type": "value_error"},
        ]})


def _check_value(value: Any) -> None:
    try:
        size = len(_json(value).encode("utf-8"))
    except (TypeError, ValueError):
        raise _invalid("value", "a pinned value must be JSON", "json_invalid") from None
    if size > MAX_VALUE_BYTES:
        raise _invalid("value", f"a pinned value is at most {MAX_VALUE_BYTES} bytes as JSON", "too_long",
                       limit=MAX_VALUE_BYTES, size=size)


def _invalid(field: str, msg: str, kind: str, **extra: Any) -> ValidationError:
    return ValidationError(f"Invalid params: {msg}", {"errors": [
        {"loc": [field], "msg": msg, "type": kind, **extra}]})
