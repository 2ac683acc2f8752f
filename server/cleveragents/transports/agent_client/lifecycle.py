"""What an ACP session keeps in its CleverAgents session's metadata, so that a restart
loses none of it: its mode, the "always" permission answers, a title, and the
slash-command turns (plans, not A2A tasks) that ``session/load`` replays with the
prompts. Also the listing that ``session/list`` pages through.

Two metadata keys, written apart (``session.update`` merges keys) so that a mode
change does not rewrite the transcript: ``agent_client`` (the state) and
``agent_client_turns`` (the command turns, newest last, bounded).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from cleveragents.ids import new_id
from cleveragents.transports.agent_client import sessions, updates
from cleveragents.transports.agent_client.wire import INVALID_PARAMS, AgentClientError

TURNS_KEY = "agent_client_turns"
MAX_TURNS = 100  # command turns kept per session; the oldest go first
MAX_TURN_UPDATES = 200  # updates kept per command turn
MAX_UPDATE_BYTES = 16 * 1024  # past this, an update is kept without its content (a large diff)
_BULKY = ("content", "rawInput", "rawOutput")
TITLE_CHARS = 80
LIST_PAGE = 50  # sessions read from the store at a time, and listed per session/list page
MAX_SCANNED = 20  # store pages one session/list call reads at most, looking for sessions in its cwd
_REPLAYED = frozenset(("agent_message_chunk", "plan", "tool_call", "tool_call_update"))

Call = Callable[..., Awaitable[dict[str, Any]]]


def state(session: sessions.AgentSession) -> dict[str, Any]:
    """The ``agent_client`` metadata of ``session``."""
    kept: dict[str, Any] = {"cwd": str(session.cwd), "mode": session.mode, "mcpServers": list(session.mcp_servers),
                            "always": dict(session.always)}
    if session.title:
        kept["title"] = session.title
    if session.forked_from:
        kept["forkedFrom"] = dict(session.forked_from)
    return kept


def restore(session_id: str, cwd: Path, metadata: dict[str, Any]) -> sessions.AgentSession:
    """The session as its metadata left it (a session made before modes were kept gets
    the default mode; a malformed answer is dropped, not trusted)."""
    kept = metadata.get(sessions.METADATA_KEY)
    kept = kept if isinstance(kept, dict) else {}
    mode = str(kept["mode"]) if kept.get("mode") in sessions.MODE_IDS else sessions.DEFAULT_MODE
    always = kept.get("always")
    always = always if isinstance(always, dict) else {}
    session = sessions.AgentSession(session_id, cwd, mode)
    session.always = {str(gate): allowed for gate, allowed in always.items() if isinstance(allowed, bool)}
    session.title = kept.get("title") if isinstance(kept.get("title"), str) else None
    names = kept.get("mcpServers")
    session.mcp_servers = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    forked = kept.get("forkedFrom")
    session.forked_from = forked if isinstance(forked, dict) else None
    turns = metadata.get(TURNS_KEY)
    session.command_turns = [t for t in turns if _is_turn(t)] if isinstance(turns, list) else []
    return session


def _is_turn(turn: Any) -> bool:
    return isinstance(turn, dict) and isinstance(turn.get("id"), str) and isinstance(turn.get("prompt"), str) \
        and isinstance(turn.get("updates"), list)


def title_of(text: str) -> str:
    """A session's title: its first prompt's first line, cut short."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1] + "\u2026"


class TurnRecorder:
    """A connection that passes everything on and keeps the ``session/update``s of one
    command turn, for ``session/load`` to replay."""

    def __init__(self, connection: Any, prompt: str):
        self._connection = connection
        self.turn: dict[str, Any] = {"id": new_id(), "prompt": prompt, "updates": []}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._connection.notify(method, params)
        update = params.get("update") if method == "session/update" else None
        kept = self.turn["updates"]
        if isinstance(update, dict) and update.get("sessionUpdate") in _REPLAYED and len(kept) < MAX_TURN_UPDATES:
            kept.append(_slim(update))


def _slim(update: dict[str, Any]) -> dict[str, Any]:
    if len(json.dumps(update)) <= MAX_UPDATE_BYTES:
        copied: dict[str, Any] = json.loads(json.dumps(update))  # the runner mutates its plan entries
        return copied
    return {key: value for key, value in update.items() if key not in _BULKY}


def replay(session_id: str, tasks: list[dict[str, Any]], turns: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The session's prompts (its tasks) and command turns, oldest first, as the updates
    that replay them. Both are ordered by their ids: ULIDs, which begin with the time."""
    entries: list[tuple[str, int, Any]] = [(str(task.get("id", "")), 0, task) for task in tasks]
    entries += [(turn["id"], 1, turn) for turn in turns]
    for _, kind, entry in sorted(entries, key=lambda e: (e[0], e[1])):
        if kind == 0:
            yield from updates.history_updates(session_id, [entry])
            continue
        yield updates.text_update(session_id, "user_message_chunk", entry["prompt"])
        for update in entry["updates"]:
            if isinstance(update, dict):
                yield {"sessionId": session_id, "update": update}


class Keeper:
    """Writes sessions' state through the facade (``session.update``), one write at a
    time per session so that the last change is the one stored."""

    def __init__(self, call: Call):
        self._call = call

    async def save_state(self, session: sessions.AgentSession) -> None:
        async with session.saving:
            await self._call("session.update", {"session_id": session.session_id,
                                                "metadata": {sessions.METADATA_KEY: state(session)}})

    async def add_turn(self, session: sessions.AgentSession, turn: dict[str, Any]) -> None:
        session.command_turns = (session.command_turns + [turn])[-MAX_TURNS:]
        async with session.saving:
            await self._call("session.update", {"session_id": session.session_id, "metadata": {
                sessions.METADATA_KEY: state(session), TURNS_KEY: session.command_turns}})


async def list_page(call: Call, cwd: Path | None, cursor: str | None) -> dict[str, Any]:
    """One ``session/list`` page: the open sessions ACP made, newest first, those in
    ``cwd`` only when it is given. Store pages are read until ``LIST_PAGE`` sessions
    pass the filter (or ``MAX_SCANNED`` pages were read); the cursor is the store's, at
    the end of the last page read, so no session is skipped or listed twice."""
    wanted = cwd.resolve() if cwd is not None else None
    infos: list[dict[str, Any]] = []
    for _ in range(MAX_SCANNED):
        page = await _store_page(call, cursor)
        infos += [info for record in page.get("sessions") or () if (info := _info(record, wanted)) is not None]
        cursor = page.get("next_cursor") or None
        if cursor is None or len(infos) >= LIST_PAGE:
            break
    return {"sessions": infos, **({"nextCursor": cursor} if cursor else {})}


async def _store_page(call: Call, cursor: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"status": "active", "limit": LIST_PAGE}
    if cursor is not None:
        params["cursor"] = cursor
    try:
        return await call("session.list", params)
    except AgentClientError as exc:
        if exc.code == INVALID_PARAMS:
            raise AgentClientError(INVALID_PARAMS, "Invalid params: cursor is not one from a previous page",
                                   {"field": "cursor", "cursor": cursor}) from None
        raise


def _info(record: dict[str, Any], cwd: Path | None) -> dict[str, Any] | None:
    """ACP's ``SessionInfo`` for a session ACP made (in ``cwd``, when given)."""
    kept = (record.get("metadata") or {}).get(sessions.METADATA_KEY)
    if not isinstance(kept, dict) or not isinstance(kept.get("cwd"), str):
        return None  # not an ACP session
    if cwd is not None and Path(kept["cwd"]).resolve() != cwd:
        return None
    info = {"sessionId": record["session_id"], "cwd": kept["cwd"], "updatedAt": record.get("updated_at")}
    if isinstance(kept.get("title"), str):
        info["title"] = kept["title"]
    return info


def list_filter(params: dict[str, Any]) -> tuple[Path | None, str | None]:
    """``session/list``'s optional ``cwd`` (absolute) and ``cursor``."""
    cwd, cursor = params.get("cwd"), params.get("cursor")
    if cwd is not None and (not isinstance(cwd, str) or not Path(cwd).is_absolute()):
        raise AgentClientError(INVALID_PARAMS, "Invalid params: cwd must be an absolute path",
                               {"field": "cwd", "cwd": cwd})
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise AgentClientError(INVALID_PARAMS, "Invalid params: cursor must be a string from a previous page",
                               {"field": "cursor"})
    return (Path(cwd) if cwd is not None else None), cursor
