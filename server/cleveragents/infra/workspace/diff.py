"""The overlay against the workspace: one git-style unified diff plus per-file hunks.

By default the old side is the workspace on disk now. After an apply the disk holds
the new side, so the caller passes the checkpoint's pre-images as ``against``.
"""

from __future__ import annotations

import difflib
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.overlay import NEW_FILE_MODE, Overlay, OverlayEntry

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"


def diff_overlay(
    source: Overlay | Iterable[OverlayEntry],
    root: Path,
    blobs: BlobStore,
    *,
    against: Mapping[str, bytes | None] | None = None,
    against_modes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``against`` maps a path to its old content (``None``: it did not exist);
    paths it does not name are compared with the disk. ``against_modes`` gives their
    old modes; without one a file's mode counts as unchanged."""
    entries = source.entries() if isinstance(source, Overlay) else sorted(source, key=lambda e: e.path)
    files: list[dict[str, Any]] = []
    texts: list[str] = []
    for entry in entries:
        new = None if entry.blob is None else blobs.get(entry.blob)
        new_mode = None if new is None else entry.mode
        if against is not None and entry.path in against:
            old = against[entry.path]
            fallback = new_mode if new_mode is not None else NEW_FILE_MODE
            old_mode = None if old is None else (against_modes or {}).get(entry.path, fallback)
        else:
            old, old_mode = _disk_file(Path(root) / entry.path)
        if old == new and old_mode == new_mode:
            continue
        file, text = _file_diff(entry.path, old, old_mode, new, new_mode)
        files.append(file)
        texts.append(text)
    return {
        "diff": "".join(texts),
        "files": files,
        "stats": {
            "files": len(files),
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
        },
    }


def _disk_file(path: Path) -> tuple[bytes | None, int | None]:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None, None
        return path.read_bytes(), stat.S_IMODE(info.st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None, None


def _file_diff(
    path: str, old: bytes | None, old_mode: int | None, new: bytes | None, new_mode: int | None
) -> tuple[dict[str, Any], str]:
    status = "added" if old is None else "deleted" if new is None else "modified"
    old_text, new_text = _text(old), _text(new)
    binary = old_text is None or new_text is None
    hunks = [] if binary else _hunks(_lines(old_text or ""), _lines(new_text or ""))
    header = [f"diff --git a/{path} b/{path}\n"]
    if status == "added":
        header.append(f"new file mode {_git_mode(new_mode)}\n")
    elif status == "deleted":
        header.append(f"deleted file mode {_git_mode(old_mode)}\n")
    elif old_mode != new_mode:
        header += [f"old mode {_git_mode(old_mode)}\n", f"new mode {_git_mode(new_mode)}\n"]
    old_name = "/dev/null" if old is None else f"a/{path}"
    new_name = "/dev/null" if new is None else f"b/{path}"
    if binary:
        header.append(f"Binary files {old_name} and {new_name} differ\n")
    elif hunks:
        header += [f"--- {old_name}\n", f"+++ {new_name}\n"]
    body = "".join(hunk["header"] + "\n" + "".join(line + "\n" for line in hunk["lines"]) for hunk in hunks)
    counted = [line[0] for hunk in hunks for line in hunk["lines"]]
    file = {
        "path": path,
        "status": status,
        "binary": binary,
        "old_mode": old_mode,
        "new_mode": new_mode,
        "additions": counted.count("+"),
        "deletions": counted.count("-"),
        "hunks": hunks,
    }
    return file, "".join(header) + body


def _text(data: bytes | None) -> str | None:
    """The decoded text; ``None`` for binary content (a NUL byte or invalid UTF-8).
    A missing side is the empty text."""
    if data is None:
        return ""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only, each keeping it (the last one may lack it)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _hunks(old: list[str], new: list[str]) -> list[dict[str, Any]]:
    hunks = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                _emit(lines, " ", old[i1:i2])
                continue
            _emit(lines, "-", old[i1:i2])
            _emit(lines, "+", new[j1:j2])
        old_start, old_lines = _span(group[0][1], group[-1][2])
        new_start, new_lines = _span(group[0][3], group[-1][4])
        old_range = str(old_start) if old_lines == 1 else f"{old_start},{old_lines}"
        new_range = str(new_start) if new_lines == 1 else f"{new_start},{new_lines}"
        hunks.append({
            "old_start": old_start,
            "old_lines": old_lines,
            "new_start": new_start,
            "new_lines": new_lines,
            "header": f"@@ -{old_range} +{new_range} @@",
            "lines": lines,
        })
    return hunks


def _emit(out: list[str], sign: str, lines: list[str]) -> None:
    for line in lines:
        out.append(sign + line.removesuffix("\n"))
        if not line.endswith("\n"):
            out.append(NO_NEWLINE)


def _span(start: int, end: int) -> tuple[int, int]:
    """A hunk range as unified diff writes it: 1-based, and an empty range names
    the line before it."""
    length = end - start
    return (start + 1 if length else start), length


def _git_mode(mode: int | None) -> str:
    return f"{stat.S_IFREG | (mode if mode is not None else NEW_FILE_MODE):o}"
