"""The state directory (``<workspace>/.cleveragents`` by default)."""

from __future__ import annotations

from pathlib import Path

# The state stays out of version control; the workspace's own actions and its
# configuration file (which names key variables, never keys) may be committed.
GITIGNORE = """\
# Written by CleverAgents: its state is local to this machine.
*
!actions/
!actions/**
!config.toml
"""


def prepare_state_dir(path: Path) -> Path:
    """Create ``path`` if needed, with a ``.gitignore`` (never overwriting one)."""
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        try:
            with open(ignore, "x", encoding="utf-8") as out:
                out.write(GITIGNORE)
        except FileExistsError:  # another process just wrote it
            pass
    return path
