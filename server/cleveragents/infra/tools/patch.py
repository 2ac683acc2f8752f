"""``patch.apply``: apply a unified diff to the plan's view, all or nothing.

Accepted: git diffs (``a/``/``b/`` prefixes, stripped when every named side has its
prefix) and plain ``diff -u`` output; several files and hunks; new files from
``/dev/null``, deletions to ``/dev/null``, git renames and modes (``new file mode``,
``new mode``) and ``\\ No newline at end of file``. Context lines must match exactly;
a hunk whose line numbers are off still applies at the nearest place its lines match
(as ``patch`` does), unless two places are equally near. Every hunk of every file is
checked before the first write, so a patch that does not apply writes nothing.

The libraries were weighed. whatthepatch (1.0.7) applies a hunk only at the lines its
header names: one whose lines had moved by five was refused, and models' diffs are
often that far off. unidiff (1.0.1) parses and does not apply; the parsing alone did
not earn a core dependency.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pydantic import Field

from cleveragents.domain.errors import ResourceNotFoundError, ValidationError
from cleveragents.domain.tools import ToolContext, ToolResult, WorkspaceView
from cleveragents.infra.tools.base import ModelTool, StrictArguments
from cleveragents.infra.workspace.text import decode_text, split_lines

TOOL = "patch.apply"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(slots=True)
class Hunk:
    header: str
    old_start: int
    old_count: int
    old: list[str] = field(default_factory=list)  # the lines the file must have: context and removals
    new: list[str] = field(default_factory=list)  # what replaces them: context and additions


@dataclass(slots=True)
class FilePatch:
    old_path: str | None  # None is /dev/null: a new file
    new_path: str | None  # None is /dev/null: a deletion
    line: int  # where the file's section starts in the patch, for errors
    hunks: list[Hunk] = field(default_factory=list)
    git: bool = False
    named: bool = True  # False until a git section's names are known
    has_headers: bool = False  # its ---/+++ lines were seen
    rename: bool = False
    mode: int | None = None

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def _malformed(line: int, message: str) -> NoReturn:
    raise ValidationError(f"malformed patch at line {line}: {message}",
                          {"tool": TOOL, "line": line, "reason": "malformed", "detail": message})


def _unquote(path: str) -> str:
    """Git quotes unusual names C-style, with octal escapes for UTF-8 bytes."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        return codecs.escape_decode(path[1:-1].encode("utf-8"))[0].decode("utf-8")
    return path


def _header_path(raw: str) -> str | None:
    path = _unquote(raw.rstrip("\r\n").split("\t", 1)[0])  # GNU diff adds a tab and a date
    return None if path == "/dev/null" else path


def _strip_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    if all(side is None or side.startswith(prefix) for side, prefix in ((old, "a/"), (new, "b/"))):
        return (old[2:] if old else None), (new[2:] if new else None)
    return old, new


def _git_section(line: str, number: int) -> FilePatch:
    """``diff --git a/x b/x``: the names are only certain when both halves agree; a
    rename names its files in later lines."""
    rest = line[len("diff --git "):]
    half = (len(rest) - 1) // 2
    old, new = _strip_prefixes(_unquote(rest[:half]), _unquote(rest[half + 1:]))
    if rest[half:half + 1] == " " and old == new:
        return FilePatch(old, new, number, git=True)
    return FilePatch(None, None, number, git=True, named=False)


def _parse_hunk(lines: list[str], start: int, match: re.Match[str]) -> tuple[Hunk, int]:
    old_start, old_count, _new_start, new_count = (
        int(value) if value is not None else 1 for value in match.groups()
    )
    hunk = Hunk(match.group(0), old_start, old_count)
    old_left, new_left, last, index = old_count, new_count, "", start
    while True:
        raw = lines[index] if index < len(lines) else ""
        tag, body = raw[:1], raw[1:]
        if raw in ("\n", "\r\n"):  # a blank context line whose space an editor trimmed
            tag, body = " ", raw
        if tag == "\\":  # "\ No newline at end of file" belongs to the line before it
            for side in {" ": (hunk.old, hunk.new), "-": (hunk.old,), "+": (hunk.new,)}.get(last, ()):
                side[-1] = side[-1].removesuffix("\n")
        elif old_left == new_left == 0:
            return hunk, index
        elif tag == " " and old_left and new_left:
            hunk.old.append(body)
            hunk.new.append(body)
            old_left, new_left = old_left - 1, new_left - 1
        elif tag == "-" and old_left:
            hunk.old.append(body)
            old_left -= 1
        elif tag == "+" and new_left:
            hunk.new.append(body)
            new_left -= 1
        else:
            _malformed(index + 1, f"hunk {hunk.header} ends early (expected {old_left} old and "
                                  f"{new_left} new lines more)")
        last = tag
        index += 1


def parse_patch(text: str, check: Callable[[], None] = lambda: None) -> list[FilePatch]:
    """The patch's files; ``check`` (a deadline, a cancel) is called every few thousand lines."""
    if text and not text.endswith("\n"):
        text += "\n"  # a patch pasted without its last newline still means one
    lines = split_lines(text)
    files: list[FilePatch] = []
    current: FilePatch | None = None
    index = 0
    while index < len(lines):
        if not index % 4096:
            check()
        line = lines[index].rstrip("\r\n")
        number = index + 1
        index += 1
        if line.startswith("diff --git "):
            current = _git_section(line, number)
            files.append(current)
        elif line.startswith("--- ") and index < len(lines) and lines[index].startswith("+++ "):
            old, new = _strip_prefixes(_header_path(line[4:]), _header_path(lines[index][4:]))
            if old is None and new is None:
                _malformed(number, "both sides are /dev/null")
            if current is None or not current.git or current.has_headers:
                current = FilePatch(old, new, number)
                files.append(current)
            elif not current.rename:  # a rename's names came from its own lines
                current.old_path, current.new_path, current.named = old, new, True
            current.has_headers = True
            index += 1
        elif line.startswith("@@"):
            match = _HUNK_HEADER.match(line)
            if match is None:
                _malformed(number, f"bad hunk header {line!r}")
            if current is None or not current.has_headers:
                _malformed(number, "a hunk before its file's ---/+++ lines")
            hunk, index = _parse_hunk(lines, index, match)
            current.hunks.append(hunk)
        elif current is not None and current.git and not current.has_headers:
            _git_header(current, line, number)
    if not files:
        _malformed(1, "no file changes found")
    for patch in files:
        if not patch.named:
            _malformed(patch.line, "cannot tell which file this section changes")
    return files


def _git_header(patch: FilePatch, line: str, number: int) -> None:
    if line.startswith(("new file mode ", "new mode ")):
        patch.mode = int(line.rsplit(" ", 1)[1], 8) & 0o777
        if line.startswith("new file"):
            patch.old_path = None
    elif line.startswith("deleted file mode "):
        patch.new_path = None
    elif line.startswith("rename from "):
        patch.old_path, patch.rename = _unquote(line[len("rename from "):]), True
    elif line.startswith("rename to "):
        patch.new_path, patch.rename, patch.named = _unquote(line[len("rename to "):]), True, True
    elif line.startswith(("Binary files ", "GIT binary patch")):
        raise ValidationError("binary patches are not supported",
                              {"tool": TOOL, "line": number, "path": patch.path, "reason": "binary"})


def _locate(lines: list[str], old: list[str], expected: int, lowest: int,
            check: Callable[[], None]) -> tuple[int | None, str]:
    """Where ``old`` matches: at ``expected`` if it can, else the nearest match. A file
    of many equal lines makes this quadratic, so ``check`` is called at each place the
    first line matches: the tool's time limit ends it."""
    if not old:  # pure insertion with no context: only the line number says where
        return (expected, "") if lowest <= expected <= len(lines) else (None, "out_of_range")
    size, first = len(old), old[0]
    matches, at, end = [], lowest, len(lines) - size + 1
    while at < end:
        try:
            at = lines.index(first, at, end)
        except ValueError:
            break
        check()
        if lines[at:at + size] == old:
            matches.append(at)
        at += 1
    if not matches:
        return None, "context_mismatch"
    best = min(matches, key=lambda at: abs(at - expected))
    if expected - (best - expected) in matches and best != expected:
        return None, "ambiguous"
    return best, ""


def apply_hunks(lines: list[str], patch: FilePatch,
                check: Callable[[], None] = lambda: None) -> tuple[list[str], list[int]]:
    """The patched lines and each hunk's offset from its header's line number."""
    result: list[str] = []
    cursor = drift = 0
    offsets = []
    for number, hunk in enumerate(patch.hunks, start=1):
        stated = hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1
        at, reason = _locate(lines, hunk.old, max(stated + drift, 0), cursor, check)
        if at is None:
            raise ValidationError(
                f"hunk {number} ({hunk.header}) of {patch.path} does not apply: {reason.replace('_', ' ')}",
                {"tool": TOOL, "path": patch.path, "hunk": number, "header": hunk.header, "reason": reason},
            )
        drift = at - stated
        offsets.append(drift)
        result += lines[cursor:at] + hunk.new
        cursor = at + len(hunk.old)
    return result + lines[cursor:], offsets


class _Pending:
    """The files as the patch has changed them so far, over the view: nothing is
    written until every file has applied."""

    def __init__(self, view: WorkspaceView):
        self.view = view
        self.files: dict[str, tuple[str | None, int | None]] = {}
        self.reads: list[str] = []

    def text(self, path: str) -> str | None:
        if path in self.files:
            return self.files[path][0]
        try:
            data = self.view.read_bytes(path)
        except FileNotFoundError:
            return None
        self.reads.append(path)
        text = decode_text(data)
        if text is None:
            raise ValidationError(f"{path} is a binary file", {"tool": TOOL, "path": path, "reason": "binary"})
        return text

    def set(self, path: str, text: str | None, mode: int | None = None) -> None:
        self.files[path] = (text, mode)


def _apply_file(patch: FilePatch, pending: _Pending, check: Callable[[], None]) -> dict[str, Any]:
    if patch.old_path is None:
        target = patch.path
        if pending.text(target) is not None:
            raise ValidationError(f"{target} already exists", {"tool": TOOL, "path": target, "reason": "exists"})
        lines, change = [], "created"
    else:
        target = patch.old_path
        if patch.new_path and not patch.rename and pending.text(patch.new_path) is not None:
            target = patch.new_path  # plain diffs may name a backup (`x.orig`) on one side
        text = pending.text(target)
        if text is None:
            raise ResourceNotFoundError(f"{target} does not exist", {"tool": TOOL, "path": target})
        lines = split_lines(text)
        change = "deleted" if patch.new_path is None else "renamed" if patch.rename else "modified"
    result, offsets = apply_hunks(lines, patch, check)
    if patch.new_path is None:
        if result:
            raise ValidationError(f"the patch deletes {target} but does not remove all of it",
                                  {"tool": TOOL, "path": target, "reason": "delete_mismatch"})
        pending.set(target, None)
    else:
        mode = patch.mode
        if change == "renamed":
            mode = mode if mode is not None else pending.view.mode(target)  # a move keeps the file's mode
            pending.set(target, None)
        pending.set(patch.new_path, "".join(result), mode)
    return {"path": patch.path, "change": change, "hunks": len(patch.hunks), "offsets": offsets}


class PatchArguments(StrictArguments):
    patch: str = Field(min_length=1, description="A unified diff (git or `diff -u` style).")


class PatchApplyTool(ModelTool[PatchArguments]):
    name = TOOL
    description = ("Apply a unified diff to the plan's files: several files and hunks, new and "
                   "deleted files; nothing is written unless every hunk applies.")
    Arguments = PatchArguments

    def execute(self, arguments: PatchArguments, context: ToolContext) -> ToolResult:
        pending = _Pending(context.view)
        files = []
        for patch in parse_patch(arguments.patch, context.check_cancelled):
            context.check_cancelled()
            files.append(_apply_file(patch, pending, context.check_cancelled))
        for path in pending.files:
            context.view.exists(path)  # a rename's target is never read: the guards see it here, before any write
        for path, (text, mode) in pending.files.items():
            if text is None:
                context.view.delete(path)
            else:
                context.view.write_bytes(path, text.encode("utf-8"), mode)
        return ToolResult(
            output={"files": files},
            summary=f"patched {len(files)} files",
            reads=pending.reads,
            writes=list(pending.files),
        )
