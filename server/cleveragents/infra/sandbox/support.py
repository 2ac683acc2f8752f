"""Whether this machine can sandbox a command, and if not, what is missing.

Landlock is asked for its ABI directly. Whether namespaces and mounts work is only
known by trying: the first check runs the launcher once, on an empty workspace, with
``true`` as the command (about 30 ms), and the answer is kept for the process.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass

from cleveragents.infra.process_tmp import new_dir
from cleveragents.infra.sandbox.launch import LAUNCHER, encode_spec, read_failure, remove_tree

PROBE_TIMEOUT = 20.0


@dataclass(frozen=True, slots=True)
class Support:
    landlock_abi: int
    namespaces: bool
    missing: tuple[str, ...]
    reason: str

    @property
    def available(self) -> bool:
        return not self.missing


def _landlock_abi() -> int:
    if platform.system() != "Linux":
        return 0
    from cleveragents.infra.sandbox.landlock import abi_version

    return abi_version()


def _probe_namespaces(landlock_abi: int) -> str | None:
    """``None`` when the launcher can build a sandbox here, else why it can't."""
    true = shutil.which("true", path="/usr/bin:/bin")
    if true is None:
        return "no `true` program to probe with"
    base = new_dir("probe")
    try:
        paths = {name: os.path.join(base, name) for name in ("workspace", "upper", "work", "root")}
        for path in paths.values():
            os.mkdir(path)
        status_read, status_write = os.pipe()
        spec = {
            "argv": ["true"], "env": {"PATH": "/usr/bin:/bin"}, "cwd": paths["workspace"],
            "workspace": paths["workspace"], "upper": paths["upper"], "work": paths["work"], "root": paths["root"],
            "home": "/tmp/home", "read_only": ["/usr", "/bin", "/lib", "/lib64", "/etc"], "network": False,
            "landlock_abi": landlock_abi, "tmp_size": 1 << 20, "file_size_limit": 1 << 20,
            "status_fd": status_write,
        }
        # stdin stays open while it runs: the launcher takes its end for the server's death.
        launcher = subprocess.Popen([sys.executable, "-I", "-S", LAUNCHER], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=[status_write])
        os.close(status_write)
        try:
            assert launcher.stdin is not None
            launcher.stdin.write(encode_spec(spec))
            launcher.stdin.flush()
            returncode = launcher.wait(PROBE_TIMEOUT)
        finally:
            launcher.kill()
            _, stderr = launcher.communicate()
        try:
            failure = read_failure(status_read)
        finally:
            os.close(status_read)
        if returncode == 0:
            return None
        if failure is not None:
            return f"{failure[0]}: {failure[1]}"
        return f"the probe exited {returncode}: {stderr.decode(errors='replace').strip()[-300:]}"
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    finally:
        remove_tree(base)


@functools.cache
def support() -> Support:
    """What this machine has; asked once per process."""
    if platform.system() != "Linux":
        return Support(0, False, ("linux",), f"commands are sandboxed on Linux only; this is {platform.system()}")
    abi = _landlock_abi()
    if abi < 1:
        return Support(0, False, ("landlock",),
                       "the kernel has no Landlock (Linux 5.13 or later, with landlock in the boot's lsm= list)")
    problem = _probe_namespaces(abi)
    if problem is not None:
        return Support(abi, False, ("user_namespaces",),
                       f"unprivileged user and mount namespaces are not usable ({problem}); check the sysctls "
                       "kernel.unprivileged_userns_clone and kernel.apparmor_restrict_unprivileged_userns")
    return Support(abi, True, (), "")
