"""Runtime settings shared by every entry point."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

STATE_DIRNAME = ".cleveragents"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the backend works and keeps its state.

    ``state_dir`` defaults to ``<workspace>/.cleveragents``; ``memory`` keeps everything
    in process (nothing is written to disk).
    """

    workspace: Path = field(default_factory=Path.cwd)
    state_dir: Path | None = None
    memory: bool = False
    event_buffer: int = 1024
    default_actor: str = "local/default"
    # Finished agent tasks kept in the store; the oldest go first, live ones never.
    max_terminal_tasks: int = 10_000

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from ``CLEVERAGENTS_*`` variables, then explicit overrides."""
        env: dict[str, object] = {}
        if value := os.environ.get("CLEVERAGENTS_WORKSPACE"):
            env["workspace"] = Path(value)
        if value := os.environ.get("CLEVERAGENTS_STATE_DIR"):
            env["state_dir"] = Path(value)
        if os.environ.get("CLEVERAGENTS_MEMORY", "").lower() in {"1", "true", "yes"}:
            env["memory"] = True
        if value := os.environ.get("CLEVERAGENTS_MAX_TERMINAL_TASKS"):
            env["max_terminal_tasks"] = int(value)
        env.update({k: v for k, v in overrides.items() if v is not None})
        for key in ("workspace", "state_dir"):
            if isinstance(env.get(key), str):
                env[key] = Path(env[key])  # type: ignore[arg-type]
        return cls(**env)  # type: ignore[arg-type]

    @property
    def resolved_workspace(self) -> Path:
        return self.workspace.expanduser().resolve()

    @property
    def resolved_state_dir(self) -> Path:
        if self.state_dir is not None:
            return self.state_dir.expanduser().resolve()
        return self.resolved_workspace / STATE_DIRNAME
