"""The overlay against the workspace: one git-style unified diff plus per-file hunks.

By default the old side is the workspace on disk now. After an apply the disk holds
the new side, so the caller passes the checkpoint's pre-images as ``against``.

The answer has caps, so a plan that changes much cannot make a huge one. A file is
listed with ``"truncated": true``, without hunks and left out of the ``diff`` text
(its status, modes and counts stay) when its own diff passes ``MAX_FILE_DIFF_BYTES``
or ``MAX_FILE_DIFF_LINES``, when the ``diff`` text would pass ``MAX_DIFF_BYTES``
with it (every later file is truncated too), or when a side is over
``MAX_INPUT_BYTES`` (not read at all: its counts are 0). ``stats.truncated_files``
counts them. ``"rewritten": true`` marks a file whose changes were too tangled to
match line by line in bounded time (``linediff``): some of its hunks show a region
removed and added whole, which is still a correct patch.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cleveragents.domain.plan_files import OverlayRecord
from cleveragents.infra.workspace._dirfd import Dirs, SymlinkInPath
from cleveragents.infra.workspace._fs import NotRegularFile, TooLarge
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.linediff import grouped, match_lines, opcodes
from cleveragents.infra.workspace.overlay import NEW_FILE_MODE, Overlay
from cleveragents.infra.workspace.text import decode_text, split_lines

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"
MAX_FILE_DIFF_BYTES = 1 << 20
MAX_FILE_DIFF_LINES = 20_000
MAX_DIFF_BYTES = 8 << 20
MAX_INPUT_BYTES = 32 << 20


def diff_overlay(
    source: Overlay | Iterable[OverlayRecord],
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
    with Dirs(root) as dirs:
        return _diff_entries(entries, dirs, blobs, against, against_modes)


def _diff_entries(entries: list[OverlayRecord], dirs: Dirs, blobs: BlobStore, against: Mapping[str, bytes | None] | None,
                  against_modes: Mapping[str, int] | None) -> dict[str, Any]:
    files: list[dict[str, Any]] = []
    texts: list[str] = []
    size, full = 0, False
    for entry in entries:
        new_mode = None if entry.blob is None else entry.mode
        if against is not None and entry.path in against:
            old = against[entry.path]
            fallback = new_mode if new_mode is not None else NEW_FILE_MODE
            old_mode = None if old is None else (against_modes or {}).get(entry.path, fallback)
            old_oversized = old is not None and len(old) > MAX_INPUT_BYTES
        else:
            old, old_mode, old_oversized = _disk_file(dirs, entry.path)
        if old_oversized or (entry.blob is not None and blobs.size(entry.blob) > MAX_INPUT_BYTES):
            # Not read at all: a side this big costs too much memory and time to diff.
            status = "deleted" if entry.blob is None else "modified" if old_mode is not None else "added"
            files.append(_file_record(entry.path, status, False, old_mode, new_mode, truncated=True))
            continue
        new = None if entry.blob is None else blobs.get(entry.blob)
        if old == new and old_mode == new_mode:
            continue
        file, text = _file_diff(entry.path, old, old_mode, new, new_mode)
        if not file["truncated"]:
            text_size = len(text.encode())
            full = full or size + text_size > MAX_DIFF_BYTES
            if full:
                file.update(truncated=True, hunks=[])
            else:
                size += text_size
                texts.append(text)
        files.append(file)
    return {
        "diff": "".join(texts),
        "files": files,
        "stats": {
            "files": len(files),
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
            "truncated_files": sum(f["truncated"] for f in files),
        },
    }


def _disk_file(dirs: Dirs, path: str) -> tuple[bytes | None, int | None, bool]:
    """The file's bytes and mode (``None``: no regular file is there, or a symlink is
    on its way), and whether it is too big to read. Opened without blocking: a FIFO
    there cannot hang the diff."""
    try:
        found = dirs.read(path, limit=MAX_INPUT_BYTES)
    except (IsADirectoryError, NotRegularFile, SymlinkInPath):
        return None, None, False
    except TooLarge as too_large:
        return None, stat.S_IMODE(too_large.info.st_mode), True
    if found is None:
        return None, None, False
    data, info = found
    return data, stat.S_IMODE(info.st_mode), False


def _file_diff(
    path: str, old: bytes | None, old_mode: int | None, new: bytes | None, new_mode: int | None
) -> tuple[dict[str, Any], str]:
    """The file's record and its part of the ``diff`` text ("" when truncated)."""
    status = "added" if old is None else "deleted" if new is None else "modified"
    old_text, new_text = _side_text(old), _side_text(new)
    binary = old_text is None or new_text is None
    hunks, complete = ([], True) if binary else _hunks(split_lines(old_text or ""), split_lines(new_text or ""))
    counted = [line[0] for hunk in hunks for line in hunk["lines"]]
    file = _file_record(path, status, binary, old_mode, new_mode, additions=counted.count("+"),
                        deletions=counted.count("-"), rewritten=not complete, hunks=hunks)
    if len(counted) > MAX_FILE_DIFF_LINES:
        file.update(truncated=True, hunks=[])
        return file, ""
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
    text = "".join(header) + body
    if len(text) > MAX_FILE_DIFF_BYTES or len(text.encode()) > MAX_FILE_DIFF_BYTES:
        file.update(truncated=True, hunks=[])
        return file, ""
    return file, text


def _file_record(
    path: str, status: str, binary: bool, old_mode: int | None, new_mode: int | None, *, additions: int = 0,
    deletions: int = 0, truncated: bool = False, rewritten: bool = False, hunks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "path": path, "status": status, "binary": binary, "old_mode": old_mode, "new_mode": new_mode,
        "additions": additions, "deletions": deletions, "truncated": truncated, "rewritten": rewritten,
        "hunks": hunks or [],
    }


def _side_text(data: bytes | None) -> str | None:
    """A side's text (``None``: binary); a missing side is the empty text."""
    return "" if data is None else decode_text(data)


def _hunks(old: list[str], new: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """The hunks, and whether every change was matched line by line."""
    hunks = []
    match = match_lines(old, new)
    for group in grouped(opcodes(match.blocks), CONTEXT_LINES):
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
    return hunks, match.complete


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
