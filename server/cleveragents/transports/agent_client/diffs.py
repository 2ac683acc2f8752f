"""A plan's diff (``_cleveragents/plan/diff``) as ACP ``diff`` tool-call content: each
file's path, old text and new text, for the editor to show. Display only: what is
written on apply is the plan's own bytes, not these texts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

MAX_SHOWN_BYTES = 1 << 20  # a larger file is named, not shown


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SHOWN_BYTES:
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _patched(old: str, hunks: list[dict[str, Any]]) -> str | None:
    """``old`` with the unified hunks applied; ``None`` when they don't fit it."""
    lines = old.split("\n")
    result: list[str] = []
    at = 0  # index into lines
    for hunk in hunks:
        start = int(hunk.get("old_start", 1))
        if int(hunk.get("old_lines", 0)):
            start -= 1  # 1-based; an insertion's old_start names the line before it
        if start < at or start > len(lines):
            return None
        result += lines[at:start]
        at = start
        for line in hunk.get("lines") or ():
            sign, text = line[:1], line[1:]
            if sign in (" ", "-"):
                if at >= len(lines) or lines[at] != text:
                    return None
                at += 1
            if sign in (" ", "+"):
                result.append(text)
    return "\n".join(result + lines[at:])


async def diff_contents(root: Path, diff: dict[str, Any], reader: Any = None) -> list[dict[str, Any]]:
    """One ``diff`` content per text file the plan changes; a ``content`` line for the
    files that can't be shown (binary, too large, truncated). With ``reader`` (the
    client reads files), the old text is the editor's, as the plan's diff was made
    against it."""
    contents: list[dict[str, Any]] = []
    for change in diff.get("files") or ():
        path, status = str(change.get("path", "")), change.get("status")
        absolute = root / path
        old = None if status == "added" else await asyncio.to_thread(_read, absolute)
        if old is not None and reader is not None and (editor := await reader.read_text(str(absolute))) is not None:
            old = old if old.replace("\r\n", "\n") == editor else editor  # line endings as on disk
        new: str | None
        if change.get("binary") or change.get("truncated") or (old is None and status != "added"):
            new = None
        elif status == "deleted":
            new = ""
        elif status == "added":
            new = "".join(line[1:] + "\n" for hunk in change.get("hunks") or () for line in hunk.get("lines") or ()
                          if line.startswith("+"))
        else:
            new = _patched(old or "", change.get("hunks") or [])
        if new is None:
            contents.append({"type": "content", "content": {"type": "text", "text": f"{path}: {status} "
                             "(not shown: binary, too large or not readable)"}})
        else:
            contents.append({"type": "diff", "path": str(absolute), "oldText": old, "newText": new})
    return contents
