"""Publish your own agent over A2A: ``Agent``, ``tool``, ``AgentTeam``, ``A2A`` and
``AgentExtension``, with ``AgentProvider`` for the card."""

from __future__ import annotations

from cleveragents.a2a.cards import AgentProvider
from cleveragents.a2a.extensions import AgentExtension
from cleveragents.domain.actor import InputRequired
from cleveragents.domain.actor import ReplyMessage as Message
from cleveragents.publish.agent import Agent
from cleveragents.publish.server import A2A
from cleveragents.publish.team import AgentTeam, Task, TeamTask
from cleveragents.publish.tools import FunctionTool, tool

__all__ = ["A2A", "Agent", "AgentExtension", "AgentProvider", "AgentTeam",
           "FunctionTool", "InputRequired", "Message", "Task", "TeamTask", "tool"]
