"""Starts one command inside the sandbox, and kills all of it if the server dies.

``python -I -S launcher.py``, started by the server as the leader of a new session. Its
stdin starts with the plan (``command.Run.spec``: a 4-byte length, then the dict in
``marshal`` form, which needs no import); stdin then stays open and reaches end of
file only when the server is gone. A setup error is written to the status descriptor
as ``stage<TAB>message``, and the launcher exits 125.

The steps, in this process:
1. New user, mount, PID and IPC namespaces, and a new network namespace (no interface
   but a loopback that is down) unless the network is granted. The user keeps its uid.
2. A new root on a tmpfs: the read-only directories bound read-only, a few devices, a
   private ``/tmp``, and the workspace as an overlay: the real workspace is the lower
   layer, the plan's upper directory takes every write.
Then in the first process of the new PID namespace, which waits on the command like an
init and takes the namespace down with it when it ends:
3. A fresh ``/proc``; ``pivot_root`` into the new root, the old one detached.
4. Landlock (same read-only and read-write split; no TCP; signals and abstract sockets
   scoped), no capabilities, a file-size limit; then the command.

Standard library only, run without ``site``, and only modules that load fast (no
``json``, ``signal`` or ``shutil``: each pulls in ``enum`` or ``re``): it costs a Python
start, as the guard before it did. Everything is imported at the start: after
``pivot_root`` the interpreter's own library may be out of sight.
"""

from __future__ import annotations

import _signal
import marshal
import os
import resource
import select
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import landlock  # noqa: E402  (a sibling module: no package import without site)
import linux  # noqa: E402

SETUP_FAILED = 125
SIGKILL = 9
DEVICES = ("null", "zero", "full", "random", "urandom")


class SetupError(Exception):
    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{stage}: {error}")
        self.stage = stage
        self.error = error


def _report(status_fd: int, failure: SetupError) -> None:
    message = f"{failure.stage}\t{failure.error}".replace("\n", " ")
    try:
        os.write(status_fd, message.encode(errors="replace"))
    except OSError:
        pass


def _which(program: str, path: str) -> str | None:
    if "/" in program:
        return program
    for directory in path.split(":"):
        candidate = os.path.join(directory, program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _make_mountpoint(target: str, *, directory: bool) -> None:
    if directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass


def _build_root(spec: dict) -> None:
    """Steps 1 and 2: every mount of the new root, made from the old one."""
    root = spec["root"]
    flags = linux.CLONE_NEWUSER | linux.CLONE_NEWNS | linux.CLONE_NEWPID | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS
    if not spec["network"]:
        flags |= linux.CLONE_NEWNET
    uid, gid = os.getuid(), os.getgid()
    try:
        linux.unshare(flags)
        linux.map_ids(uid, gid)
    except OSError as exc:
        raise SetupError("namespaces", exc) from None
    try:
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=1m")
        for private in ("/tmp", "/dev/shm"):
            target = _inside(root, private)
            os.makedirs(target, exist_ok=True)
            linux.mount("tmpfs", target, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                        f"mode=1777,size={spec['tmp_size']}")
        for path in spec["read_only"]:
            target = _inside(root, path)
            if os.path.islink(path):  # /bin -> usr/bin: the same link in the new root
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if not os.path.lexists(target):
                    os.symlink(os.readlink(path), target)
                continue
            _make_mountpoint(target, directory=os.path.isdir(path))
            linux.bind_read_only(path, target)
        dev = _inside(root, "/dev")
        os.makedirs(dev, exist_ok=True)
        for name in DEVICES:
            _make_mountpoint(os.path.join(dev, name), directory=False)
            linux.mount(f"/dev/{name}", os.path.join(dev, name), None, linux.MS_BIND)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, os.path.join(dev, name))
        os.makedirs(_inside(root, spec["home"]), exist_ok=True)
        os.makedirs(_inside(root, "/proc"), exist_ok=True)
        workspace = _inside(root, spec["workspace"])
        os.makedirs(workspace, exist_ok=True)
        # userxattr: overlayfs keeps its marks (opaque directories) in user.* attributes, the
        # ones a user namespace may set; without it removing a directory fails with EIO.
        options = f"lowerdir={_escape(spec['workspace'])},upperdir={_escape(spec['upper'])}," \
                  f"workdir={_escape(spec['work'])},userxattr"
        linux.mount("overlay", workspace, "overlay", linux.MS_NOSUID | linux.MS_NODEV, options)
    except OSError as exc:
        raise SetupError("mounts", exc) from None


def _escape(path: str) -> str:
    # overlay's option parser splits on "," and ":"; a backslash escapes them.
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _enter_root(spec: dict) -> None:
    """Step 3, in the new PID namespace."""
    root = spec["root"]
    try:
        linux.mount("proc", _inside(root, "/proc"), "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
        os.chdir(root)
        linux.pivot_root(".", ".")
        linux.umount(".", linux.MNT_DETACH)
        os.chdir("/")
    except OSError as exc:
        raise SetupError("pivot_root", exc) from None


def _confine(spec: dict) -> None:
    """Step 4: Landlock, capabilities and limits; what the command inherits."""
    try:
        ruleset = landlock.Ruleset(spec["landlock_abi"], deny_tcp=not spec["network"])
        for path in spec["read_only"]:
            ruleset.allow(path, landlock.READ_ONLY)
        for path in (spec["workspace"], "/tmp", "/dev/shm"):
            ruleset.allow(path, landlock.READ_WRITE)
        for name in DEVICES:
            ruleset.allow(f"/dev/{name}", landlock.READ_FILE | landlock.WRITE_FILE)
        ruleset.allow("/dev", landlock.READ_DIR)
        ruleset.allow("/proc", landlock.READ_FILE | landlock.READ_DIR)
        linux.drop_capabilities()
        ruleset.restrict_self()
    except OSError as exc:
        raise SetupError("landlock", exc) from None
    limit = spec["file_size_limit"]
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _exit_like(status: int) -> None:
    """Exit as the command did (its code, or its signal), so the server reads the same."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number != SIGKILL:
            _signal.signal(number, _signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))


def _init(spec: dict, status_fd: int, result_fd: int) -> None:
    """The first process of the namespace: confine, start the command, reap until it ends,
    and pass its wait status on (a namespace's first process can't die of a signal sent
    from inside it, its own included, so the launcher repeats the command's end)."""
    try:
        _enter_root(spec)
        _confine(spec)
    except SetupError as exc:
        _report(status_fd, exc)
        os._exit(SETUP_FAILED)
    os.close(status_fd)
    program = _which(spec["argv"][0], spec["env"].get("PATH", os.defpath))
    command = os.fork()
    if command == 0:
        try:
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)  # not the server's pipe: its end of file is the server's death, for us
            os.close(null)
            os.chdir(spec["cwd"])
            os.execve(program or spec["argv"][0], spec["argv"], spec["env"])
        except OSError as exc:
            os.write(2, f"{spec['argv'][0]}: {exc.strerror}\n".encode())
            os._exit(127)
    while True:
        pid, status = os.wait()
        if pid == command:
            os.write(result_fd, f"{status}\n".encode())
            os._exit(0)  # the namespace and all left in it go with this process


def _read_spec() -> dict:
    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = os.read(0, size - len(data))
            if not chunk:
                raise EOFError("the server closed the pipe before the plan was read")
            data += chunk
        return data

    (size,) = struct.unpack("=I", exactly(4))
    return marshal.loads(exactly(size))


def main() -> None:
    spec = _read_spec()
    status_fd = spec["status_fd"]
    os.set_inheritable(status_fd, False)
    try:
        _build_root(spec)
    except SetupError as exc:
        _report(status_fd, exc)
        sys.exit(SETUP_FAILED)
    result_read, result_write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(result_read)
        linux.die_with_parent()
        _init(spec, status_fd, result_write)
    os.close(status_fd)
    os.close(result_write)
    pidfd = os.pidfd_open(child)
    while True:
        readable, _, _ = select.select([0, pidfd], [], [])
        if 0 in readable and os.read(0, 1) == b"":  # the server is gone
            os.kill(child, SIGKILL)
        if pidfd in readable:
            _, status = os.waitpid(child, 0)
            reported = os.read(result_read, 64)
            _exit_like(int(reported) if reported else status)


if __name__ == "__main__":
    main()
