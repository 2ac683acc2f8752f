"""Publish your own agent over A2A: ``Agent``, ``tool``, ``AgentTeam``, ``A2A``,
``AgentExtension`` and ``OAuth2``."""

from __future__ import annotations

from cleveragents.a2a.extensions import AgentExtension
from cleveragents.config import OAuth2
from cleveragents.domain.actor import InputRequired
from cleveragents.domain.actor import ReplyMessage as Message
from cleveragents.publish.agent import Agent
from cleveragents.publish.server import A2A
from cleveragents.publish.team import AgentTeam, Task, TeamTask
from cleveragents.publish.tools import FunctionTool, tool

__all__ = ["A2A", "Agent", "AgentExtension", "AgentTeam", "FunctionTool", "InputRequired", "Message", "Task", "TeamTask", "tool",
           "OAuth2"]
