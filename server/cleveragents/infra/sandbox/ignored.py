"""The workspace's ``.gitignore`` rules, for the files a command changed.

What a build or a test run leaves behind (caches, objects, logs) is what a project
ignores, and it is not a change anybody reviews: a command's change to an ignored path
is reported, not made part of the plan. The rules are ``.git/info/exclude`` and every
``.gitignore`` on the way from the root to a changed file, the deeper ones last, as git
reads them, as the command left them.

A command may write the rule files, so they are matched in linear time (one re2 set,
never Python's backtracking ``re``), and bounded: a line longer than
``MAX_PATTERN_CHARS`` is skipped, and so is one that is no pattern (a lone ``!``, a
trailing backslash), as git skips it; past ``MAX_RULES`` rules, or past what one set
holds (re2 refuses a set past a few thousand), the later rules are not applied. What
they would have left out becomes part of the plan, where it is reviewed, rather than
dropped unseen; the log says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from cleveragents.domain.errors import StructuredError

logger = logging.getLogger("cleveragents.sandbox")

_EXCLUDE = ".git/info/exclude"
MAX_RULES = 10_000  # rules applied, from every rule file together
MAX_PATTERN_CHARS = 1024  # a longer line is skipped: re2 took 50 s to refuse one of 400 KB


def _lines(read: Callable[[str], bytes], path: str) -> list[str]:
    """The lines of a rule file; none when it can't be read (absent, refused, too big)."""
    try:
        return read(path).decode("utf-8", "replace").splitlines()
    except (OSError, StructuredError):
        return []


def _rebased(lines: Iterable[str], directory: str) -> list[str]:
    """A ``.gitignore``'s patterns as patterns of the root: a name matches at any depth
    below its directory, a pattern with a slash is anchored there."""
    rebased = []
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line[1:] if negated else line
        if not directory:
            rebased.append(line)
            continue
        body = pattern.rstrip("/")
        anchored = "/" in body
        rooted = f"{directory}/{pattern.lstrip('/')}" if anchored else f"{directory}/**/{pattern}"
        rebased.append(("!" if negated else "") + "/" + rooted)
    return rebased


def ignored_paths(read: Callable[[str], bytes], paths: Iterable[str], read_exclude: Callable[[str], bytes]) -> set[str]:
    """Those of ``paths`` the workspace's ignore rules take. ``read`` reads a
    ``.gitignore`` as the command left it (a cache directory often brings its own);
    ``read_exclude`` reads ``.git/info/exclude``, which tools may not read."""
    import pathspec

    paths = list(paths)
    directories = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        directories.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    lines = _rebased(_lines(read_exclude, _EXCLUDE), "")
    for directory in sorted(directories, key=lambda d: (d.count("/") if d else -1, d)):
        rule_file = f"{directory}/.gitignore" if directory else ".gitignore"
        lines.extend(_rebased(_lines(read, rule_file), directory))
    if not lines:
        return set()
    import re2

    applied = lines[:MAX_RULES]
    while True:
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(applied, _pattern, backend="re2")
            break
        except re2.error:  # "failed to compile Set": more than one set holds
            applied = applied[:len(applied) // 2]
    if len(applied) < len(lines):
        logger.warning("the ignore rules for a command's changes are %d lines; only the first %d are applied, "
                       "and what the others would leave out is kept for review", len(lines), len(applied))
    return {path for path in paths if spec.match_file(path)}


def _pattern(line: str) -> Any:
    from pathspec.patterns.gitignore.base import GitIgnorePatternError
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    if len(line) <= MAX_PATTERN_CHARS:
        with contextlib.suppress(GitIgnorePatternError):
            return GitIgnoreSpecPattern(line)
    return GitIgnoreSpecPattern("")  # matches nothing
