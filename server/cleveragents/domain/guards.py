"""Which workspace paths a plan may touch, and how much it may change.

Pure rules over workspace-relative POSIX paths: no I/O. Symlinks and absolute paths
that lie inside the root are the overlay's business, since only it knows the root.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
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


@dataclass(frozen=True, slots=True)
class GuardPolicy:
    """``protected`` are paths relative to the root (a directory protects all below
    it); ``protected_anywhere`` are names refused at any depth (a nested repository's
    ``.git``); ``secret_patterns`` are fnmatch patterns on the file name. Matching
    ignores case, so a case-insensitive filesystem can't be used to slip past."""

    protected: tuple[str, ...] = (".git", ".cleveragents")
    protected_anywhere: tuple[str, ...] = (".git",)
    secret_patterns: tuple[str, ...] = (
        ".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_rsa.*", "id_ed25519", "*.p12",
    )
    max_files_changed: int = 5000
    max_bytes_written: int = 256 * 1024 * 1024
    max_read_bytes: int = 32 * 1024 * 1024
    max_steps: int = 200

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> GuardPolicy:
        """The defaults with the given settings (keys are the field names)."""
        return cls().with_overrides(**settings)

    def with_overrides(self, **overrides: Any) -> GuardPolicy:
        known = {f.name for f in fields(self)}
        values: dict[str, Any] = {}
        for name, value in overrides.items():
            if name not in known:
                raise ValidationError(f"unknown guard setting {name!r}", {"field": name, "reason": "unknown"})
            values[name] = _setting(name, value, tuple_of_str=isinstance(getattr(self, name), tuple))
        return replace(self, **values)

    def refusal(self, path: str) -> str | None:
        """``"protected"``, ``"secret"`` or ``None`` for a normalized path."""
        folded = path.casefold()
        parts = folded.split("/")
        for entry in self.protected:
            root = entry.strip("/").casefold()
            if folded == root or folded.startswith(root + "/"):
                return "protected"
        anywhere = {name.casefold() for name in self.protected_anywhere}
        if anywhere.intersection(parts):
            return "protected"
        if any(fnmatch.fnmatchcase(parts[-1], pattern.casefold()) for pattern in self.secret_patterns):
            return "secret"
        return None

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
