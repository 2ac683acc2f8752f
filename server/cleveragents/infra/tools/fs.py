"""File tools: read, glob, search, write and replace, all through the plan's view.

Patterns are RE2's (``infra/regex.py``): they match in time linear in the text, and a
construct RE2 lacks (a backreference, a lookaround) is refused, naming it. Line and
column numbers are 1-based; columns count characters. A file is text when
it decodes as UTF-8 and has no NUL byte (the plan diff's rule, ``workspace.text``);
other files are binary: ``fs.read`` refuses them and ``fs.search``/``fs.replace``
skip them. A file over the guards' ``max_read_bytes``, or one that is no regular
file (a FIFO), is refused by ``fs.read``; ``fs.search``/``fs.replace`` skip it and
list it under ``skipped``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
from pydantic import Field
from pydantic_core import PydanticCustomError

from cleveragents.domain.errors import (
    BudgetExceededError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.tools import ToolContext, ToolResult, WorkspaceView
from cleveragents.infra.regex import MAX_PATTERN_CHARS, PatternError, Template, compile_pattern, search_lines
from cleveragents.infra.tools.base import ModelTool, StrictArguments
from cleveragents.infra.workspace.text import decode_text, is_text, split_lines

MAX_LINE_TEXT = 1000  # a match's line is cut here: minified files have huge lines
MAX_GLOB_CHARS = 4096
SYNTAX = "RE2 syntax (docs/tools.md): no backreferences or lookarounds; \\w, \\d, \\s and \\b are ASCII."


def read_text(view: WorkspaceView, path: str, tool: str) -> str:
    try:
        data = view.read_bytes(path)
    except FileNotFoundError:
        raise ResourceNotFoundError(f"{path} does not exist", {"tool": tool, "path": path}) from None
    except IsADirectoryError:
        raise ValidationError(f"{path} is a directory", {"tool": tool, "path": path, "reason": "is_directory"}) from None
    text = decode_text(data)
    if text is None:
        raise ValidationError(f"{path} is a binary file", {"tool": tool, "path": path, "reason": "binary"})
    return text


def _text_files(
    view: WorkspaceView, pattern: str, context: ToolContext, skipped: list[dict[str, str]]
) -> Iterator[tuple[str, bytes]]:
    """``(path, data)`` for each text file matching ``pattern``, checking for a cancel
    and the deadline between files. Files too big or not regular go to ``skipped``."""
    for path in view.glob(pattern):
        context.check_cancelled()
        if context.progress is not None:
            context.progress(path)
        try:
            data = view.read_bytes(path)
        except FileNotFoundError:  # listed, then deleted by an earlier write
            continue
        except BudgetExceededError as exc:
            if exc.data.get("limit") != "max_read_bytes":
                raise
            skipped.append({"path": path, "reason": "too_large"})
            continue
        except ValidationError as exc:
            if exc.data.get("reason") != "not_a_regular_file":
                raise
            skipped.append({"path": path, "reason": "not_a_regular_file"})
            continue
        if is_text(data):
            yield path, data


def _checked_pattern(pattern: str) -> str:
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        raise _pattern_error(exc) from None
    return pattern


def _pattern_error(exc: PatternError) -> PydanticCustomError:
    if exc.construct is not None:
        return PydanticCustomError("unsupported_syntax", str(exc), {"construct": exc.construct, "syntax": "RE2"})
    return PydanticCustomError("invalid_pattern", str(exc), {"syntax": "RE2"})


class ReadArguments(StrictArguments):
    path: str = Field(min_length=1, description="Workspace-relative path.")
    start_line: int | None = Field(None, ge=1, description="First line to return (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to return, inclusive.")

    @pydantic.model_validator(mode="after")
    def _check_range(self) -> ReadArguments:
        if self.start_line is not None and self.end_line is not None and self.end_line < self.start_line:
            raise ValueError("end_line is before start_line")
        return self


class ReadTool(ModelTool[ReadArguments]):
    name = "fs.read"
    description = "Read a text file, optionally a range of its lines. Binary files are refused."
    Arguments = ReadArguments

    def execute(self, arguments: ReadArguments, context: ToolContext) -> ToolResult:
        text = read_text(context.view, arguments.path, self.name)
        lines = split_lines(text)
        start = arguments.start_line or 1
        end = min(arguments.end_line or len(lines), len(lines))
        if arguments.start_line is not None or arguments.end_line is not None:
            text = "".join(lines[start - 1:end])
        return ToolResult(
            output={"path": arguments.path, "text": text, "start_line": start, "end_line": end,
                    "total_lines": len(lines)},
            summary=f"read {arguments.path} lines {start}-{end} of {len(lines)}",
            reads=[arguments.path],
        )


class GlobArguments(StrictArguments):
    pattern: str = Field(min_length=1, max_length=MAX_GLOB_CHARS, description="Glob; `**` crosses directories.")
    max_results: int = Field(1000, ge=1, le=100_000)


class GlobTool(ModelTool[GlobArguments]):
    name = "fs.glob"
    description = "List the files matching a glob pattern, sorted."
    Arguments = GlobArguments

    def execute(self, arguments: GlobArguments, context: ToolContext) -> ToolResult:
        paths = context.view.glob(arguments.pattern)
        shown = paths[:arguments.max_results]
        return ToolResult(
            output={"pattern": arguments.pattern, "paths": shown, "truncated": len(paths) > len(shown)},
            summary=f"{len(paths)} files match {arguments.pattern}",
        )


class SearchArguments(StrictArguments):
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS,
                         description="Regular expression, matched within each line. " + SYNTAX)
    glob: str = Field("**/*", min_length=1, max_length=MAX_GLOB_CHARS, description="Which files to search.")
    max_results: int = Field(100, ge=1, le=10_000)
    ignore_case: bool = False

    _check_pattern = pydantic.field_validator("pattern")(_checked_pattern)


class SearchTool(ModelTool[SearchArguments]):
    name = "fs.search"
    description = "Search text files for a regular expression (RE2 syntax); binary files are skipped."
    Arguments = SearchArguments

    def execute(self, arguments: SearchArguments, context: ToolContext) -> ToolResult:
        pattern = compile_pattern(arguments.pattern, ignore_case=arguments.ignore_case, lines=True)
        results: list[dict[str, Any]] = []
        searched: list[str] = []
        skipped: list[dict[str, str]] = []
        truncated = False
        for path, data in _text_files(context.view, arguments.glob, context, skipped):
            searched.append(path)
            for match in search_lines(pattern, data, MAX_LINE_TEXT, context.check_cancelled):
                if len(results) == arguments.max_results:
                    truncated = True
                    break
                results.append({"path": path, "line": match.line, "column": match.column, "text": match.text})
            if truncated:
                break
        return ToolResult(
            output={"results": results, "truncated": truncated, "files_searched": len(searched),
                    "skipped": skipped},
            summary=f"{len(results)} matches in {len(searched)} files",
            reads=searched,
        )


class WriteArguments(StrictArguments):
    path: str = Field(min_length=1, description="Workspace-relative path.")
    content: str
    mode: int | None = Field(None, ge=0, le=0o777, description="Permission bits; kept when omitted.")


class WriteTool(ModelTool[WriteArguments]):
    name = "fs.write"
    description = "Write a text file (UTF-8) in the plan's overlay, creating or replacing it."
    Arguments = WriteArguments

    def execute(self, arguments: WriteArguments, context: ToolContext) -> ToolResult:
        created = not context.view.exists(arguments.path)
        data = arguments.content.encode("utf-8")
        context.view.write_bytes(arguments.path, data, arguments.mode)
        return ToolResult(
            output={"path": arguments.path, "bytes": len(data), "created": created},
            summary=f"{'created' if created else 'wrote'} {arguments.path}",
            writes=[arguments.path],
        )


class ReplaceArguments(StrictArguments):
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS,
                         description="Regular expression, matched against each whole file. " + SYNTAX)
    replacement: str = Field(description="`re.sub` replacement: `\\1` or `\\g<name>` refer to groups.")
    glob: str = Field("**/*", min_length=1, max_length=MAX_GLOB_CHARS, description="Which files to change.")
    count: int = Field(0, ge=0, description="Most replacements per file; 0 replaces every match.")
    ignore_case: bool = False
    multiline: bool = Field(False, description="`^` and `$` match at each line.")
    dotall: bool = Field(False, description="`.` matches newlines too.")

    _check_pattern = pydantic.field_validator("pattern")(_checked_pattern)

    @pydantic.field_validator("replacement")
    @classmethod
    def _check_replacement(cls, replacement: str, info: pydantic.ValidationInfo) -> str:
        pattern = info.data.get("pattern")
        if pattern is not None:  # else the pattern already failed
            try:
                Template.parse(replacement, compile_pattern(pattern))
            except PatternError as exc:
                raise PydanticCustomError("invalid_replacement", str(exc)) from None
        return replacement


class ReplaceTool(ModelTool[ReplaceArguments]):
    name = "fs.replace"
    description = ("Replace a regular expression (RE2 syntax) in the text files matching a glob; "
                   "only changed files are written.")
    Arguments = ReplaceArguments

    def execute(self, arguments: ReplaceArguments, context: ToolContext) -> ToolResult:
        pattern = compile_pattern(arguments.pattern, ignore_case=arguments.ignore_case,
                                  multiline=arguments.multiline, dotall=arguments.dotall)
        template = Template.parse(arguments.replacement, pattern)
        scanned: list[str] = []
        skipped: list[dict[str, str]] = []
        changed: list[tuple[str, bytes, int]] = []
        for path, data in _text_files(context.view, arguments.glob, context, skipped):
            scanned.append(path)
            new_data, replacements = pattern.subn(template, data, arguments.count, context.check_cancelled)
            if new_data != data:
                changed.append((path, new_data, replacements))
        # Every file is computed before the first write, so a cancel writes nothing.
        for path, new_data, _ in changed:
            context.view.write_bytes(path, new_data)
        files = [{"path": path, "replacements": replacements} for path, _, replacements in changed]
        total = sum(replacements for _, _, replacements in changed)
        return ToolResult(
            output={"files": files, "total_replacements": total, "files_scanned": len(scanned),
                    "skipped": skipped},
            summary=f"{total} replacements in {len(files)} of {len(scanned)} files",
            reads=scanned,
            writes=[path for path, _, _ in changed],
        )
