"""``actor.edit``: a plan step that asks the plan's actor for edits.

The actor gets the instruction, the files the step names (read through the plan's
overlay, so it sees the plan's earlier edits) and the guidance given with
``plan/prompt`` / ``plan/correct``. It edits with the file tools, which run against
the overlay: its edits land there, for review in the plan's diff. Each tool call it
makes becomes a decision node under the step's, with the rationale it stated.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field

from cleveragents.domain.actor import InputRequired, TextChunk, ToolCall, Turn
from cleveragents.domain.errors import BudgetExceededError, PlanError, StructuredError
from cleveragents.domain.task import Message, Part, Role
from cleveragents.domain.tools import Tool, ToolContext, ToolResult
from cleveragents.ids import new_id
from cleveragents.infra.actors.toolbox import EDITING, ToolBox
from cleveragents.infra.tools.base import ModelTool, StrictArguments
from cleveragents.infra.tools.fs import GlobTool, ReadTool, ReplaceTool, SearchTool, WriteTool, read_text
from cleveragents.infra.tools.patch import PatchApplyTool
from cleveragents.infra.tools.runner import ToolRunner

# The actor's tool calls run in a pool apart from the steps': a step waiting on its
# actor holds a thread, and its calls must never queue behind it. They keep the step's
# deadline (no limit of their own).
_CALLS = ToolRunner(None, name="actor-tool")
MAX_FILES_CHARS = 100_000  # what the actor is shown of the files up front; it can read more
EDIT_INSTRUCTIONS = (
    "You edit files in a software workspace to carry out the user's instruction. The files "
    "it concerns are shown below. Change files only with the tools (fs.write writes a whole "
    "file, fs.replace substitutes a regular expression, patch.apply applies a unified diff); "
    "your edits are collected into a plan that the user reviews before anything is written. "
    "Before each tool call, say in one sentence why you make it. When done, reply with a "
    "short summary of what you changed."
)


class ActorEditArguments(StrictArguments):
    instruction: str = Field(min_length=1, max_length=20_000, description="What to change, in plain words.")
    glob: str = Field("", max_length=1000, description="The files the edit concerns (shown to the actor).")
    paths: list[str] = Field(default_factory=list, max_length=200, description="More files to show, by path.")
    max_files: int = Field(20, ge=0, le=200, description="Most files shown up front.")


class ActorEditTool(ModelTool[ActorEditArguments]):
    name = "actor.edit"
    description = ("Ask the plan's actor (the session's model) to edit files: it gets the instruction, "
                   "the files and the guidance, and its edits land in the plan's overlay.")
    Arguments = ActorEditArguments

    def execute(self, arguments: ActorEditArguments, context: ToolContext) -> ToolResult:
        if context.actor is None:
            raise PlanError("actor.edit needs an actor, and this plan has none", {"tool": self.name})
        files, shown = self._files(arguments, context)
        writes: list[str] = []
        reads = list(files)

        def seen(name: str, result: ToolResult) -> None:
            reads.extend(p for p in result.reads if p not in reads)
            writes.extend(p for p in result.writes if p not in writes)

        tools: list[Tool] = [ReadTool(), GlobTool(), SearchTool(), WriteTool(), ReplaceTool(), PatchApplyTool()]
        toolbox = ToolBox(lambda: tools, EDITING, _CALLS)
        message = Message(new_id(), Role.USER, (Part.of_text(arguments.instruction),))
        turn = Turn(new_id(), new_id(), message, (), toolbox.infos(), {
            "instructions": EDIT_INSTRUCTIONS, "guidance": list(context.guidance), "files": files,
        }, toolbox.invoker(lambda: dataclasses.replace(context), seen), caller=context.caller)
        try:
            events = context.actor.run(turn)
        except BudgetExceededError:
            raise
        except StructuredError as exc:
            raise PlanError(f"actor.edit: {exc.message}", {"tool": self.name, **exc.data}) from None
        asked = next((e for e in events if isinstance(e, InputRequired)), None)
        if asked is not None:
            raise PlanError(f"actor.edit: the actor asks for input: {asked.prompt}",
                            {"tool": self.name, "reason": "input_required", "prompt": asked.prompt})
        calls = [e for e in events if isinstance(e, ToolCall)]
        # The reply is what the actor said after its last tool call (what it said
        # before a call is that call's rationale).
        last = max((i for i, e in enumerate(events) if isinstance(e, ToolCall)), default=-1)
        reply = "".join(e.text for e in events[last + 1:] if isinstance(e, TextChunk)).strip()
        summary = reply.splitlines()[0][:200] if reply else f"{len(writes)} file(s) edited"
        return ToolResult(
            output={"actor": context.actor.name, "reply": reply, "files_shown": shown, "tool_calls": len(calls),
                    "edited": writes},
            summary=summary, reads=reads, writes=writes)

    def _files(self, arguments: ActorEditArguments, context: ToolContext) -> tuple[dict[str, str], list[str]]:
        paths = list(arguments.paths)
        if arguments.glob:
            paths += [p for p in context.view.glob(arguments.glob) if p not in paths]
        files: dict[str, str] = {}
        size = 0
        for path in paths[:arguments.max_files]:
            context.check_cancelled()
            try:
                text = read_text(context.view, path, self.name)
            except StructuredError:  # binary, missing, too large: the actor can still look
                continue
            if size + len(text) > MAX_FILES_CHARS:
                break
            files[path] = text
            size += len(text)
        return files, list(files)
