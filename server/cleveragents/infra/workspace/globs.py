"""Glob patterns over workspace-relative POSIX paths.

``**`` as a whole segment matches any number of directories (none included); ``*``
and ``?`` stay within one segment; ``[abc]`` and ``[!abc]`` are character classes.
Dotfiles match like any other name: the guards, not the pattern, hide what is private.
"""

from __future__ import annotations

import re

_SPECIAL = frozenset("*?[")


def compile_glob(pattern: str) -> re.Pattern[str]:
    segments = pattern.split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def literal_prefix(pattern: str) -> list[str]:
    """The leading directories of ``pattern`` that hold no wildcard: a walk for
    ``src/**/*.py`` need not look outside ``src``."""
    prefix: list[str] = []
    for segment in pattern.split("/")[:-1]:
        if _SPECIAL.intersection(segment):
            break
        prefix.append(segment)
    return prefix


def _segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := _class_end(segment, i)) > 0:
            body = segment[i + 1:end]
            negate = body[:1] == "!"
            body = (body[1:] if negate else body).replace("\\", "\\\\").replace("[", "\\[")
            if body.startswith("^"):
                body = "\\" + body  # a literal caret, as in fnmatch
            out.append("[" + ("^/" if negate else "") + body + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 (a literal ``[``)."""
    i = start + 1
    if i < len(segment) and segment[i] == "!":
        i += 1
    if i < len(segment) and segment[i] == "]":
        i += 1  # a leading `]` is a member, as in fnmatch
    return segment.find("]", i)
