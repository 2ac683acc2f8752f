"""A command's sandbox, from the server's side: what it may see, its overlay, its changes.

``CommandSandbox.prepare`` makes a run directory (private to this user) holding the
overlay's upper and work directories and an empty mount point for the new root, plants
the upper layer (``layers.plant``) and writes the launcher's plan. The caller starts
``launcher.py`` with it (``Run.argv``, ``Run.spec_line``, ``Run.status_fd``), waits, and
then reads the command's changes (``Run.changes``) before ``Run.close`` removes it all.

What a command may read is the system's read-only directories, the server's own Python
and the toolchains on its ``PATH`` (a ``bin`` or ``shims`` directory brings the
directory above it, unless that holds a user's secrets: the home directory never
comes whole), and the directories the configuration adds. It may write its overlay of
the workspace and a private ``/tmp``, which is also its home.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from cleveragents.infra.process_tmp import new_dir
from cleveragents.infra.sandbox.launch import LAUNCHER, encode_spec, read_failure, remove_tree
from cleveragents.infra.sandbox.layers import LayerChanges, Planted, plant, read_changes
from cleveragents.infra.sandbox.protected_scan import ProtectedScan
from cleveragents.infra.sandbox.support import Support, support
from cleveragents.infra.workspace.overlay import Overlay

SYSTEM_READ_ONLY = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# Where a home directory keeps credentials: no read grant may include these.
HOME_SECRETS = (".ssh", ".aws", ".azure", ".config", ".gnupg", ".kube", ".docker", ".netrc", ".npmrc",
                ".pypirc", ".git-credentials", ".password-store", ".local/share/keyrings")
TOOLCHAIN_DIRS = ("bin", "shims")
SANDBOX_HOME = "/tmp/home"
TMP_SIZE = 512 * 1024 * 1024


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _secret_roots(home: str) -> list[str]:
    return [os.path.join(home, name) for name in HOME_SECRETS]


def read_only_paths(workspace: str, path_variable: str, extra: Iterable[str] = (),
                    home: str | None = None) -> list[str]:
    """The directories a command may read and run, outermost first, without the ones
    another covers, and without any that holds (or is held by) a home's secrets."""
    home = os.path.realpath(home or os.path.expanduser("~"))
    secrets = _secret_roots(home)
    candidates: list[str] = list(SYSTEM_READ_ONLY)
    candidates += [sys.base_prefix, sys.prefix, sys.exec_prefix]
    for entry in path_variable.split(os.pathsep):
        if not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        candidates.append(real)
        if os.path.basename(real) in TOOLCHAIN_DIRS:
            candidates.append(os.path.dirname(real))
    candidates += [os.path.realpath(os.path.expanduser(path)) for path in extra]
    chosen: list[str] = []
    for path in sorted({os.path.normpath(path) for path in candidates if os.path.lexists(path)}, key=len):
        real = os.path.realpath(path) if not os.path.islink(path) else path
        if path in ("/", home) or any(_inside(secret, real) or _inside(real, secret) for secret in secrets):
            continue
        if _inside(real, workspace) or _inside(workspace, real) and real != workspace:
            continue  # the workspace comes as its overlay
        if any(_inside(path, kept) and not os.path.islink(kept) for kept in chosen):
            continue
        chosen.append(path)
    return chosen


class SandboxUnavailable(Exception):
    def __init__(self, found: Support) -> None:
        super().__init__(found.reason)
        self.support = found


class SandboxSetupFailed(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


@dataclass
class Run:
    """One command's run directory and the launcher's plan for it."""

    directory: str
    upper: str
    planted: Planted
    spec: dict[str, object]
    status_read: int
    status_write: int
    argv: list[str] = field(default_factory=lambda: [sys.executable, "-I", "-S", LAUNCHER])

    @property
    def spec_bytes(self) -> bytes:
        return encode_spec(self.spec)

    def started(self) -> None:
        """The launcher has its copy of the status pipe's writing end."""
        if self.status_write >= 0:
            os.close(self.status_write)
            self.status_write = -1

    def setup_error(self) -> SandboxSetupFailed | None:
        """What the launcher reported, if its setup failed (read once it has exited)."""
        failure = read_failure(self.status_read)
        return None if failure is None else SandboxSetupFailed(*failure)

    def changes(self, overlay: Overlay) -> LayerChanges:
        return read_changes(self.upper, overlay, self.planted)

    def close(self) -> None:
        """Release the run; its directory is removed by a worker, off the step's time
        (here, when the process is exiting: no new thread may start then)."""
        self.started()
        os.close(self.status_read)
        try:
            _cleaner().submit(remove_tree, self.directory)
        except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
            remove_tree(self.directory)


@functools.cache
def _cleaner() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-cleanup")


class CommandSandbox:
    """The sandbox of one workspace's commands. ``network`` lets them use it;
    ``read`` adds directories they may read."""

    def __init__(self, workspace: str, scan: ProtectedScan, *, network: bool = False,
                 read: Sequence[str] = (), file_size_limit: int = 256 * 1024 * 1024) -> None:
        self.workspace = os.path.realpath(workspace)
        self.scan = scan
        self.network = network
        self.read = tuple(read)
        self.file_size_limit = file_size_limit

    def check(self) -> Support:
        found = support()
        if not found.available:
            raise SandboxUnavailable(found)
        return found

    def prepare(self, overlay: Overlay, argv: Sequence[str], env: Mapping[str, str]) -> Run:
        found = self.check()
        directory = new_dir("run")
        try:
            upper, work, root = (os.path.join(directory, name) for name in ("upper", "work", "root"))
            for path in (upper, work, root):
                os.mkdir(path, 0o700)
            os.chmod(upper, stat.S_IMODE(os.stat(self.workspace).st_mode))  # the overlay's root takes its mode
            planted = plant(upper, overlay, self.scan.hidden())
            status_read, status_write = os.pipe()
        except BaseException:
            remove_tree(directory)
            raise
        command_env = {**env, "HOME": SANDBOX_HOME, "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
        spec: dict[str, object] = {
            "argv": list(argv), "env": command_env, "cwd": self.workspace, "workspace": self.workspace,
            "upper": upper, "work": work, "root": root, "home": SANDBOX_HOME,
            "read_only": read_only_paths(self.workspace, env.get("PATH", os.defpath), self.read),
            "network": self.network, "landlock_abi": found.landlock_abi, "tmp_size": TMP_SIZE,
            "file_size_limit": self.file_size_limit, "status_fd": status_write,
        }
        return Run(directory, upper, planted, spec, status_read, status_write)


def read_state_file(workspace: str, relative: str) -> bytes:
    """A file below the workspace that tools may not read (``.git/info/exclude``),
    opened without following a link at any step."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        parts = relative.split("/")
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(file_fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return b""
            return file.read(1 << 20)
    finally:
        os.close(fd)
