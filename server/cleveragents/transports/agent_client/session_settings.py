"""A session's settings over ACP: its mode, set with ``session/set_mode`` or as a
session config option (``session/set_config_option``).

The one config option is ``mode`` (category ``mode``), a select whose values are the
session modes. The session's actor is not offered as an option: it is fixed when the
session is made (``session.update`` does not change it). Each change is kept with the
session and announced both ways (``current_mode_update`` and, for a change the client
did not make through the config option, ``config_option_update``), so a client that
follows either one stays in step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cleveragents.transports.agent_client import sessions
from cleveragents.transports.agent_client.wire import INVALID_PARAMS, AgentClientError

if TYPE_CHECKING:
    from cleveragents.transports.agent_client.server import AgentClientServer

MODE_OPTION = "mode"
OPTION_IDS = (MODE_OPTION,)


def config_options(session: sessions.AgentSession) -> list[dict[str, Any]]:
    """The session's ``configOptions``, with their current values."""
    return [{
        "id": MODE_OPTION, "name": "Mode", "category": "mode", "type": "select",
        "description": "How much a plan waits for you: before it runs, before its changes are applied",
        "currentValue": session.mode,
        "options": [{"value": mode["id"], "name": mode["name"], "description": mode["description"]}
                    for mode in sessions.MODES],
    }]


def session_state(session: sessions.AgentSession) -> dict[str, Any]:
    """What ``session/new``, ``load``, ``resume`` and ``fork`` answer about the session."""
    return {"modes": session.mode_state(), "configOptions": config_options(session)}


def requested_option(params: dict[str, Any]) -> tuple[str, str]:
    """``configId`` and ``value`` of a ``session/set_config_option`` request."""
    option = params.get("configId")
    if option not in OPTION_IDS:
        raise AgentClientError(INVALID_PARAMS, "Invalid params: unknown config option", {
            "field": "configId", "configId": option, "available": list(OPTION_IDS)})
    value = params.get("value")
    if params.get("type", "select") != "select" or not isinstance(value, str):
        raise AgentClientError(INVALID_PARAMS, f"Invalid params: {option} is a select option; value must be "
                               "one of its value ids", {"field": "value", "configId": option,
                                                        "available": list(sessions.MODE_IDS)})
    if value not in sessions.MODE_IDS:
        raise AgentClientError(INVALID_PARAMS, f"Invalid params: unknown value for {option}", {
            "field": "value", "configId": option, "value": value, "available": list(sessions.MODE_IDS)})
    return option, value


class SessionSettings:
    """``session/set_mode`` and ``session/set_config_option``."""

    def __init__(self, server: AgentClientServer):
        self._server = server

    def handlers(self) -> dict[str, Any]:
        return {"session/set_mode": self.set_mode, "session/set_config_option": self.set_config_option}

    async def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._server.sessions.get(params.get("sessionId"))
        await self.change_mode(session, sessions.requested_mode(params), announce_options=True)
        return {}

    async def set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._server.sessions.get(params.get("sessionId"))
        _, value = requested_option(params)
        await self.change_mode(session, value, announce_options=False)  # the answer carries the options
        return {"configOptions": config_options(session)}

    async def change_mode(self, session: sessions.AgentSession, mode: str, *, announce_options: bool) -> None:
        """Sets and keeps the mode (it outlives the process), then announces it."""
        before, session.mode = session.mode, mode
        try:
            await self._server.keeper.save_state(session)
        except AgentClientError:
            session.mode = before
            raise
        notify = self._server.connection.notify
        notify("session/update", {"sessionId": session.session_id, "update": {
            "sessionUpdate": "current_mode_update", "currentModeId": session.mode}})
        if announce_options:
            notify("session/update", {"sessionId": session.session_id, "update": {
                "sessionUpdate": "config_option_update", "configOptions": config_options(session)}})
