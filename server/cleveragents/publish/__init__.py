"""Publish your own agent over A2A: ``Agent``, ``tool``, ``AgentTeam``, ``A2A`` and
``AgentExtension`` (with ``AgentProvider`` and ``OAuth2`` for the card); what a handler answers
with: ``TextPart``, ``FilePart``,
``DataPart``, ``Artifact``, ``Message``, ``InputRequired``, ``ReplyAs``,
``TaskRejected``, and A2UI parts; ``AgentReply``, what ``Agent.start`` answers (``create_a2ui_part``, ``is_a2ui_part``)."""

from __future__ import annotations

from cleveragents.a2a.cards import AgentProvider
from cleveragents.a2a.extensions import AgentExtension
from cleveragents.config import OAuth2
from cleveragents.domain.actor import InputRequired
from cleveragents.domain.actor import ReplyMessage as Message
from cleveragents.domain.replies import ReplyAs, TaskRejected
from cleveragents.publish.a2ui import A2UI_MIME_TYPE, create_a2ui_part, is_a2ui_part
from cleveragents.publish.agent import Agent
from cleveragents.publish.parts import Artifact, DataPart, FilePart, TextPart
from cleveragents.publish.reply import AgentReply
from cleveragents.publish.server import A2A
from cleveragents.publish.team import AgentTeam, Task, TeamTask
from cleveragents.publish.tools import FunctionTool, tool

__all__ = ["A2A", "A2UI_MIME_TYPE", "Agent", "AgentExtension", "AgentProvider", "AgentReply", "AgentTeam", "Artifact",
           "DataPart", "FilePart", "FunctionTool", "InputRequired", "Message", "OAuth2", "ReplyAs", "Task",
           "TaskRejected", "TeamTask", "TextPart", "create_a2ui_part", "is_a2ui_part", "tool"]
