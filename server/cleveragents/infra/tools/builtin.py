"""The tools every workspace has."""

from __future__ import annotations

from cleveragents.domain.tools import Tool
from cleveragents.infra.tools.actor_edit import ActorEditTool
from cleveragents.infra.tools.fs import (
    GlobTool,
    ReadTool,
    ReplaceTool,
    SearchTool,
    WriteTool,
)
from cleveragents.infra.tools.patch import PatchApplyTool
from cleveragents.infra.tools.shell import ShellRunTool


def builtin_tools() -> list[Tool]:
    return [ReadTool(), GlobTool(), SearchTool(), WriteTool(), ReplaceTool(), PatchApplyTool(), ShellRunTool(),
            ActorEditTool()]
