"""Glob patterns over workspace-relative POSIX paths.

``**`` as a whole segment matches any number of directories (none included); ``*``
and ``?`` stay within one segment; ``[abc]`` and ``[!abc]`` are character classes.
Dotfiles match like any other name: the guards, not the pattern, hide what is private.

A glob becomes an RE2 pattern (``infra/regex.py``), so matching it costs time linear in
the path: with a backtracking engine, ``*a*a*a*a*a*a*a*b`` against a long name of
``a``s takes hours. The libraries that match globs were weighed: wcmatch compiles to
Python's ``re`` (with atomic groups, which still backtrack across ``**``), and pathspec
speaks gitignore's language (a name without a slash matches at any depth, a directory
matches everything below it), a different contract from this one.
"""

from __future__ import annotations

import re

from cleveragents.domain.errors import ValidationError
from cleveragents.infra.regex import Pattern, PatternError, compile_pattern

_SPECIAL = frozenset("*?[")


def compile_glob(pattern: str) -> Pattern:
    """The pattern's matcher (``fullmatch(path)``); ``ValidationError`` for a glob
    that is not one (a class with a reversed range, ``[z-a]``)."""
    try:
        return compile_pattern(_translate(pattern))
    except PatternError as exc:
        raise ValidationError(f"invalid glob {pattern!r}: {exc}",
                              {"field": "pattern", "pattern": pattern, "reason": "invalid_glob"}) from None


def _translate(pattern: str) -> str:
    segments = pattern.split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    return "".join(parts)


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
            if body.startswith(("^", "]")):
                body = "\\" + body  # a literal caret or bracket, as in fnmatch
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
