"""``shell.run``: run one allow-listed command, without a shell, inside the sandbox.

The command runs confined (``infra/sandbox``): on the plan's overlay of the workspace,
with the system's read-only directories, a private ``/tmp``, no network and none of
the protected paths or the user's secrets. The files it changes become the plan's
changes (``sandbox/record.py``), reviewed in its diff like any other tool's. Where the
machine can't sandbox, it is refused, naming what is missing, unless the configuration
says ``[shell] sandbox = "off"``: then it runs unconfined in the workspace on disk, under
a small guard (``shell_guard.py``) that kills its process group if the server dies.

Either way its environment is rebuilt from a few names (nothing secret-looking passes),
stdin is closed, and it runs in a process group of its own, killed whole when it ends,
times out or is cancelled. Its output (stdout and stderr together, the last 1 MiB) is
kept as an artifact. A non-zero exit is a result, not an error. Which commands may run
at all (allow-listed command prefixes, no launcher options, no paths outside the
workspace) is decided first, in ``shell_policy``.
"""

from __future__ import annotations

import itertools
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
from pydantic import Field

from cleveragents.domain.errors import AuthorizationError, ResourceNotFoundError, ValidationError
from cleveragents.domain.tools import Artifact, ToolContext, ToolResult
from cleveragents.infra.tools.base import ModelTool, StrictArguments
from cleveragents.infra.tools.shell_policy import DEFAULT_ALLOW, check_command
from cleveragents.infra.workspace.overlay import Overlay

__all__ = ["DEFAULT_ALLOW", "ShellArguments", "ShellRunTool", "child_environment", "sandbox_off"]

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


def sandbox_off(settings: Mapping[str, Any]) -> bool:
    """Whether the configuration turned the sandbox off (``[shell] sandbox = "off"``)."""
    return settings.get("shell_sandbox") == "off"


@dataclass(slots=True)
class _Finished:
    exit_code: int | None
    timed_out: bool
    duration_ms: int
    output: _TailReader


class ShellRunTool(ModelTool[ShellArguments]):
    name = "shell.run"
    description = ("Run an allow-listed command (no shell) in a sandbox: on the plan's view of the workspace, "
                   "without network, secrets or protected paths. The files it changes become the plan's "
                   "changes; its output is kept as a log artifact.")
    Arguments = ShellArguments

    def __init__(self) -> None:
        self._runs = itertools.count(1)
        self._sandboxes: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    def execute(self, arguments: ShellArguments, context: ToolContext) -> ToolResult:
        context.check_cancelled()
        argv = arguments.argv
        check_command(argv, context.settings.get("shell_allow") or DEFAULT_ALLOW, context.workspace)
        env = child_environment(os.environ, context.settings.get("shell_env") or ())
        # Looked up as the child will (the policy allows names, never paths): the guard
        # would only report a missing program in the log.
        if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
            raise ResourceNotFoundError(f"{argv[0]} is not installed", {"command": argv[0]})
        if sandbox_off(context.settings):
            finished = self._unconfined(argv, env, arguments.timeout, context)
            return self._result(argv, finished, {"sandbox": "off"}, [])
        return self._confined(argv, env, arguments.timeout, context)

    # -- confined ------------------------------------------------------------------
    def _sandbox(self, context: ToolContext, view: Overlay) -> Any:
        from cleveragents.infra.sandbox.command import CommandSandbox
        from cleveragents.infra.sandbox.protected_scan import ProtectedScan

        network = bool(context.settings.get("shell_network"))
        read = tuple(context.settings.get("shell_read") or ())
        key = (os.path.realpath(context.workspace), view.policy, network, read)
        with self._lock:
            sandbox = self._sandboxes.get(key)
            if sandbox is None:
                scan = ProtectedScan(context.workspace, view.policy)
                sandbox = self._sandboxes[key] = CommandSandbox(context.workspace, scan, network=network, read=read,
                                                                file_size_limit=view.policy.max_bytes_written)
        return sandbox

    def _confined(self, argv: list[str], env: dict[str, str], timeout: float, context: ToolContext) -> ToolResult:
        from cleveragents.infra.sandbox.command import SandboxUnavailable, read_state_file
        from cleveragents.infra.sandbox.record import record

        view = context.view
        if not isinstance(view, Overlay):
            raise ValidationError("shell.run runs in a plan: it needs the plan's view of the workspace",
                                  {"tool": self.name, "reason": "no_plan"})
        sandbox = self._sandbox(context, view)
        try:
            run = sandbox.prepare(view, argv, env)
        except SandboxUnavailable as exc:
            raise AuthorizationError(f"shell.run needs a sandbox, and this machine can't make one: {exc}", {
                "tool": self.name, "reason": "sandbox_unavailable", "missing": list(exc.support.missing),
                "detail": exc.support.reason, "setting": '[shell] sandbox = "off" runs commands unconfined',
            }) from None
        try:
            process = subprocess.Popen(
                run.argv, cwd="/", env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=[run.status_write],
            )
            run.started()
            assert process.stdin is not None
            process.stdin.write(run.spec_bytes)
            process.stdin.flush()
            finished = self._supervise(process, timeout, context)
            failed = run.setup_error()  # only the launcher writes there, and only when it fails
            if failed is not None:
                raise AuthorizationError(f"shell.run could not build its sandbox: {failed}", {
                    "tool": self.name, "reason": "sandbox_failed", "stage": failed.stage, "detail": failed.message})
            # Recorded while the layer is there: a written file is read only when recorded.
            recorded = record(view, run.changes(view), view.policy,
                              lambda path: read_state_file(sandbox.workspace, path))
        finally:
            run.close()
        return self._result(argv, finished, {"sandbox": "on", "changes": recorded.output()},
                            [*recorded.written, *recorded.deleted])

    # -- unconfined ------------------------------------------------------------------
    def _unconfined(self, argv: list[str], env: dict[str, str], timeout: float, context: ToolContext) -> _Finished:
        guarded = hasattr(os, "killpg")  # the guard kills a process group: POSIX only
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", GUARD, *argv] if guarded else argv, cwd=context.workspace, env=env,
            stdin=subprocess.PIPE if guarded else subprocess.DEVNULL,  # the guard's line to this server
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
        return self._supervise(process, timeout, context)

    # -- both ----------------------------------------------------------------------
    def _supervise(self, process: subprocess.Popen[bytes], timeout: float, context: ToolContext) -> _Finished:
        """Drain the output and wait, killing the whole group at the end, on a cancel
        (``ToolCancelled``) or at ``timeout``."""
        reader = _TailReader(process.stdout)
        reader.start()
        started = time.monotonic()
        try:
            timed_out = self._wait(process, started + timeout, context)
        finally:
            _kill_group(process)  # what it left running too: a plan step leaves no processes behind
            if process.stdin is not None:
                process.stdin.close()
            reader.join(READER_GRACE_SECONDS)
            if not reader.is_alive():  # closing under a blocked reader would wait for it
                reader.stream.close()
        return _Finished(process.returncode, timed_out, round((time.monotonic() - started) * 1000), reader)

    def _result(self, argv: list[str], finished: _Finished, extra: dict[str, Any], writes: list[str]) -> ToolResult:
        log = f"shell-{next(self._runs)}.log"
        output = finished.output
        changed = len(writes)
        ending = "timed out" if finished.timed_out else f"exited {finished.exit_code}"
        return ToolResult(
            output={"command": argv, "exit_code": finished.exit_code, "timed_out": finished.timed_out,
                    "duration_ms": finished.duration_ms, "output_bytes": output.total,
                    "output_truncated": output.total > LOG_LIMIT, "log": log, **extra},
            summary=f"{argv[0]} {ending} after {finished.duration_ms} ms"
                    + (f"; {changed} file{'s' if changed != 1 else ''} changed" if changed else ""),
            writes=writes,
            artifacts=[Artifact(log, output.tail())],
        )

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], deadline: float, context: ToolContext) -> bool:
        """Whether the command ran past ``deadline``; ``ToolCancelled`` on a cancel. A
        process descriptor wakes the wait the moment the command ends (``Popen.wait``
        with a timeout sleeps in growing steps)."""
        pidfd = os.pidfd_open(process.pid) if hasattr(os, "pidfd_open") else None
        try:
            while True:
                if pidfd is not None:
                    select.select([pidfd], [], [], POLL_SECONDS)
                    if process.poll() is not None:
                        return False
                else:  # pragma: no cover - not Linux
                    try:
                        process.wait(POLL_SECONDS)
                        return False
                    except subprocess.TimeoutExpired:
                        pass
                context.check_cancelled()
                if time.monotonic() >= deadline:
                    return True
        finally:
            if pidfd is not None:
                os.close(pidfd)
