"""Which workspace paths a plan may touch, and how much it may change.

Pure rules over workspace-relative POSIX paths: no I/O. Symlinks and absolute paths
that lie inside the root are the overlay's business, since only it knows the root.

Two lists keep tools away from paths. ``protected`` names the directories that are
the repository's and the backend's own (``.git``, the state directory): file tools
neither read nor write below them, and what a command changes there is not part of
its plan. ``protected_paths`` are gitignore-style patterns for secrets and for files
that would run code (``.env*``, ``*.pem``, ``id_*``, a repository's config and hooks):
no tool reads or writes them, and a command doesn't see them. A configuration adds
patterns to the list; one that starts with ``!`` takes a path off it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from cleveragents.domain.errors import AuthorizationError, ValidationError

# `C:/x` and `C:\x` are absolute for a Windows client even when we run on POSIX.
_DRIVE = re.compile(r"^[A-Za-z]:/")


def _refused(path: object, reason: str, **extra: Any) -> AuthorizationError:
    return AuthorizationError(f"path {path!r} refused: {reason}", {"path": path, "reason": reason, **extra})


def normalize(path: str) -> str:
    """The cleaned workspace-relative POSIX form of ``path`` ("a/./b" -> "a/b").

    Backslashes count as separators, so a Windows client's path means the same thing
    on every server. Refuses empty paths, NUL bytes, absolute paths and any ``..``
    that climbs above the root."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise _refused(path, "invalid_path")
    posix = path.replace("\\", "/")
    if posix.startswith("/") or _DRIVE.match(posix):
        raise _refused(path, "absolute_path")
    parts: list[str] = []
    for part in posix.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise _refused(path, "outside_workspace")
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        raise _refused(path, "invalid_path")
    return "/".join(parts)


DEFAULT_PROTECTED_PATHS = (
    ".env*", "*.pem", "*.key", "*.p12", "id_*", "**/.git/config", "**/.git/hooks/**",
)


@dataclass(frozen=True, slots=True)
class GuardPolicy:
    """``protected`` are paths relative to the root (a directory protects all below
    it); ``protected_anywhere`` are names refused at any depth (a nested repository's
    ``.git``); ``protected_paths`` are gitignore-style patterns (a name without a
    slash matches at any depth, ``**`` crosses directories, ``!`` takes a path back
    off the list). Matching ignores case, so a case-insensitive filesystem can't be
    used to slip past."""

    protected: tuple[str, ...] = (".git", ".cleveragents")
    protected_anywhere: tuple[str, ...] = (".git",)
    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED_PATHS
    max_files_changed: int = 5000
    max_bytes_written: int = 256 * 1024 * 1024
    max_read_bytes: int = 32 * 1024 * 1024
    max_steps: int = 200
    _matcher: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> GuardPolicy:
        """The defaults with the given settings (keys are the field names)."""
        return cls().with_overrides(**settings)

    def with_overrides(self, **overrides: Any) -> GuardPolicy:
        known = {f.name for f in fields(self)}
        values: dict[str, Any] = {}
        for name, value in overrides.items():
            if name not in known or name.startswith("_"):
                raise ValidationError(f"unknown guard setting {name!r}", {"field": name, "reason": "unknown"})
            values[name] = _setting(name, value, tuple_of_str=isinstance(getattr(self, name), tuple))
        return replace(self, **values)

    def refusal(self, path: str) -> str | None:
        """``"protected"`` (an internal directory), ``"protected_path"`` (on the
        protected-paths list) or ``None`` for a normalized path."""
        folded = path.casefold()
        if self.internal(folded):
            return "protected"
        if self.matches_protected_path(folded):
            return "protected_path"
        return None

    def internal(self, path: str) -> bool:
        """Whether ``path`` lies in a directory of ``protected`` or ``protected_anywhere``."""
        folded = path.casefold()
        for entry in self.protected:
            root = entry.strip("/").casefold()
            if folded == root or folded.startswith(root + "/"):
                return True
        anywhere = {name.casefold() for name in self.protected_anywhere}
        return bool(anywhere.intersection(folded.split("/")))

    def matches_protected_path(self, path: str, *, directory: bool = False) -> bool:
        """Whether the protected-paths list takes ``path`` (a directory: all below it)."""
        matcher = self._matcher
        if matcher is None:
            import pathspec  # only when a path is first checked: it is not on the start-up path

            matcher = pathspec.GitIgnoreSpec.from_lines(pattern.casefold() for pattern in self.protected_paths)
            object.__setattr__(self, "_matcher", matcher)
        folded = path.casefold()
        return bool(matcher.match_file(folded + "/" if directory else folded))

    def check(self, path: str, *, write: bool) -> str:
        """The normalized path, or ``AuthorizationError`` when the plan may not touch
        it. Reads and writes are refused alike: a secret must not leak into a plan."""
        normalized = normalize(path)
        reason = self.refusal(normalized)
        if reason is not None:
            raise _refused(path, reason, access="write" if write else "read")
        return normalized


def _setting(name: str, value: Any, *, tuple_of_str: bool) -> Any:
    if tuple_of_str:
        if isinstance(value, (list, tuple)) and all(isinstance(item, str) and item for item in value):
            if name == "protected":
                return tuple(_protected_path(index, item) for index, item in enumerate(value))
            return tuple(value)
        raise ValidationError(f"{name} must be a list of non-empty strings", {"field": name, "expected": "list[str]"})
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValidationError(f"{name} must be a non-negative integer", {"field": name, "expected": "int>=0"})


def _protected_path(index: int, entry: str) -> str:
    """``entry`` in the form ``refusal`` compares: "./state/" and "state\\" are "state"."""
    try:
        return normalize(entry)
    except AuthorizationError as exc:
        # The entry itself is left out: it may be a path outside the workspace.
        raise ValidationError("protected paths must be relative to the workspace", {
            "field": "protected", "index": index, "reason": exc.data["reason"]}) from None
