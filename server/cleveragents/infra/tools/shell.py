"""``shell.run``: run one allow-listed command in the workspace, without a shell.

The command runs on the files on disk (its cwd is the workspace root), not on the
plan's overlay. Its environment is rebuilt from a few names (nothing secret-looking
passes), stdin is closed, and it runs in its own process group, killed whole when
the command ends, times out or is cancelled, so nothing it started outlives the
step. A small guard (``shell_guard.py``) leads that group and kills it if the server
itself dies. Its output (stdout and stderr together, the last 1 MiB) is kept as an
artifact. A non-zero exit is a result, not an error. What may run (allow-listed
command prefixes, no launcher options, no paths outside the workspace) is decided in
``shell_policy``.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pydantic
from pydantic import Field

from cleveragents.domain.errors import ResourceNotFoundError
from cleveragents.domain.tools import Artifact, ToolContext, ToolResult
from cleveragents.infra.tools.base import ModelTool, StrictArguments
from cleveragents.infra.tools.shell_policy import DEFAULT_ALLOW, check_command

__all__ = ["DEFAULT_ALLOW", "ShellArguments", "ShellRunTool", "child_environment"]

PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
# Plurals too: the server's own CLEVERAGENTS_AUTH_TOKENS and CLEVERAGENTS_API_KEYS are lists of secrets.
_SECRET = re.compile(r"(_TOKENS?|_KEYS?)$|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
LOG_LIMIT = 1024 * 1024
POLL_SECONDS = 0.05
READER_GRACE_SECONDS = 2.0  # a child that escaped the group may hold the pipe open
GUARD = str(Path(__file__).with_name("shell_guard.py"))


class ShellArguments(StrictArguments):
    command: str | list[str] = Field(description="A command line (split like a POSIX shell, never run by one) "
                                                  "or its argv.")
    timeout: float = Field(60, gt=0, le=600, description="Seconds before the command is killed.")

    @pydantic.field_validator("command")
    @classmethod
    def _splittable(cls, command: str | list[str]) -> str | list[str]:
        argv = shlex.split(command) if isinstance(command, str) else command
        if not argv or not argv[0]:
            raise ValueError("the command is empty")
        return command

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command) if isinstance(self.command, str) else list(self.command)


def child_environment(source: Mapping[str, str], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """The names a command may see, minus anything that looks like a secret; PATH
    keeps only absolute entries so the workspace's own files cannot shadow a tool."""
    env = {name: source[name] for name in (*PASSED_ENV, *extra_names)
           if name in source and not _SECRET.search(name)}
    if "PATH" in env:
        env["PATH"] = os.pathsep.join(entry for entry in env["PATH"].split(os.pathsep) if os.path.isabs(entry))
    return env


class _TailReader(threading.Thread):
    """Drains the pipe so the child never blocks on a full one; keeps the tail."""

    def __init__(self, stream: Any):
        super().__init__(daemon=True)
        self.stream = stream
        self.chunks: deque[bytes] = deque()
        self.size = self.total = 0

    def run(self) -> None:
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            self.chunks.append(chunk)
            self.size += len(chunk)
            self.total += len(chunk)
            while self.size - len(self.chunks[0]) >= LOG_LIMIT:
                self.size -= len(self.chunks.popleft())

    def tail(self) -> bytes:
        return b"".join(self.chunks)[-LOG_LIMIT:]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows has no process groups to signal
            process.kill()
    except ProcessLookupError:
        pass
    process.wait()


class ShellRunTool(ModelTool[ShellArguments]):
    name = "shell.run"
    description = ("Run an allow-listed command (no shell) with the workspace root as its cwd; arguments "
                   "may not name paths outside the workspace. It sees "
                   "the files on disk, not the plan's pending edits. Output is kept as a log artifact.")
    Arguments = ShellArguments

    def __init__(self) -> None:
        self._runs = itertools.count(1)

    def execute(self, arguments: ShellArguments, context: ToolContext) -> ToolResult:
        context.check_cancelled()
        argv = arguments.argv
        check_command(argv, context.settings.get("shell_allow") or DEFAULT_ALLOW, context.workspace)
        env = child_environment(os.environ, context.settings.get("shell_env") or ())
        # Looked up as the child will (the policy allows names, never paths): the guard
        # would only report a missing program in the log.
        if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
            raise ResourceNotFoundError(f"{argv[0]} is not installed", {"command": argv[0]})
        guarded = hasattr(os, "killpg")  # the guard kills a process group: POSIX only
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", GUARD, *argv] if guarded else argv, cwd=context.workspace, env=env,
            stdin=subprocess.PIPE if guarded else subprocess.DEVNULL,  # the guard's line to this server
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
        reader = _TailReader(process.stdout)
        reader.start()
        started = time.monotonic()
        try:
            timed_out = self._wait(process, started + arguments.timeout, context)
        finally:
            _kill_group(process)  # what it left running too: a plan step leaves no processes behind
            if process.stdin is not None:
                process.stdin.close()
            reader.join(READER_GRACE_SECONDS)
            if not reader.is_alive():  # closing under a blocked reader would wait for it
                reader.stream.close()
        duration_ms = round((time.monotonic() - started) * 1000)
        log = f"shell-{next(self._runs)}.log"
        return ToolResult(
            output={"command": argv, "exit_code": process.returncode, "timed_out": timed_out,
                    "duration_ms": duration_ms, "output_bytes": reader.total,
                    "output_truncated": reader.total > LOG_LIMIT, "log": log},
            summary=f"{argv[0]} {'timed out' if timed_out else f'exited {process.returncode}'} "
                    f"after {duration_ms} ms",
            artifacts=[Artifact(log, reader.tail())],
        )

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], deadline: float, context: ToolContext) -> bool:
        """Whether the command ran past ``deadline``; ``ToolCancelled`` on a cancel."""
        while True:
            try:
                process.wait(POLL_SECONDS)
                return False
            except subprocess.TimeoutExpired:
                pass
            context.check_cancelled()
            if time.monotonic() >= deadline:
                return True
