"""A command's changes, made part of its plan: through the overlay, under the guards.

- A change to a protected path (``.env``, a repository's config or hooks, ...) refuses
  the whole step: nothing of it becomes part of the plan.
- A change below an internal directory (``.git``, the state directory) is the tool's own
  bookkeeping (git's index, say): it is dropped, and listed.
- A change to a path the workspace ignores (``.gitignore``) is dropped, and counted.
- What a plan can't hold (a symlink, a FIFO) is dropped, and listed.
- Every other change is written to the overlay, which checks the limits as it does
  for any tool. A file the command only copied up (same bytes, same mode) is no change.

A written file is read from the layer only when it is recorded, one at a time, and
only if the plan's budget has room for its size: so ``record`` runs while the layer is
there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cleveragents.domain.errors import AuthorizationError, StructuredError
from cleveragents.domain.guards import GuardPolicy
from cleveragents.infra.sandbox.ignored import ignored_paths
from cleveragents.infra.sandbox.layers import LayerChanges
from cleveragents.infra.workspace.overlay import Overlay

LISTED = 50  # paths named per kind in a step's output; the counts are whole


@dataclass(slots=True)
class Recorded:
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    not_recorded: dict[str, str] = field(default_factory=dict)

    def output(self) -> dict[str, Any]:
        return {
            "written": self.written[:LISTED], "deleted": self.deleted[:LISTED],
            "files_changed": len(self.written) + len(self.deleted),
            "discarded": self.discarded[:LISTED], "ignored": self.ignored[:LISTED], "ignored_count": len(self.ignored),
            "not_recorded": [{"path": path, "kind": kind} for path, kind in list(self.not_recorded.items())[:LISTED]],
        }


def _record_written(view: Overlay, path: str, changes: LayerChanges) -> bool:
    """Write ``path`` as the command left it, unless it only copied it up (same mode,
    same bytes); whether it wrote. A file the view lacks, or has with another mode, is
    changed without reading it, and is read only once the budget has room for it."""
    size, mode = changes.written[path]
    data = None
    try:
        if view.mode(path) == mode:
            data = changes.read(path)
            if view.read_bytes(path) == data:
                return False
    except (OSError, StructuredError):
        pass
    view.check_room(path, size)
    view.write_bytes(path, changes.read(path) if data is None else data, mode)
    return True


def record(view: Overlay, changes: LayerChanges, policy: GuardPolicy,
           read_exclude: Callable[[str], bytes]) -> Recorded:
    """Make ``changes`` part of ``view``; ``AuthorizationError`` when one touches a
    protected path (then ``view`` is left as it was)."""
    protected = sorted(path for path in (*changes.written, *changes.deleted, *changes.unsupported)
                       if policy.matches_protected_path(path))
    if protected:
        raise AuthorizationError("the command changed protected paths; none of its changes were kept", {
            "tool": "shell.run", "reason": "protected_path", "paths": protected[:LISTED]})
    recorded = Recorded()
    candidates: list[str] = []
    for path in sorted({*changes.written, *changes.deleted, *changes.unsupported}):
        if policy.internal(path):
            recorded.discarded.append(path)
        else:
            candidates.append(path)
    def read_as_left(path: str) -> bytes:
        if path in changes.written:
            return changes.read(path)
        if path in changes.deleted:
            raise FileNotFoundError(path)
        return view.read_bytes(path)

    ignored = ignored_paths(read_as_left, candidates, read_exclude) if candidates else set()
    recorded.ignored = sorted(ignored)
    for path in candidates:
        if path in ignored:
            continue
        if path in changes.unsupported:
            recorded.not_recorded[path] = changes.unsupported[path]
        elif path in changes.deleted:
            try:
                view.delete(path)
            except FileNotFoundError:
                continue
            recorded.deleted.append(path)
    for path in candidates:
        if path in changes.written and path not in ignored and _record_written(view, path, changes):
            recorded.written.append(path)
    return recorded
