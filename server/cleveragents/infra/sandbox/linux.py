"""The Linux calls the sandbox launcher needs that the standard library lacks: namespaces,
mounts, ``pivot_root`` and dropping capabilities. Standard library only (ctypes)."""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2

_PR_CAPBSET_DROP = 24
_PR_SET_PDEATHSIG = 1
_PIVOT_ROOT = {"x86_64": 155, "amd64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41}

# statvfs flags that a bind mount keeps and a remount in a user namespace must repeat
# (the kernel locks them).
_LOCKED_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                 (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> None:
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _text(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def map_ids(uid: int, gid: int) -> None:
    """Be ``uid``/``gid`` in the new user namespace, as outside it (files keep their owner)."""
    with open("/proc/self/setgroups", "w") as file:
        file.write("deny")
    with open("/proc/self/uid_map", "w") as file:
        file.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as file:
        file.write(f"{gid} {gid} 1")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    _check(_libc.mount(_text(source), _text(target), _text(fstype), ctypes.c_ulong(flags), _text(data)),
           f"mount {target}")


def bind_read_only(source: str, target: str) -> None:
    """Bind ``source`` (and the mounts below it) at ``target``, read-only."""
    mount(source, target, None, MS_BIND | MS_REC)
    locked = 0
    flags = os.statvfs(source).f_flag
    for statvfs_flag, mount_flag in _LOCKED_FLAGS:
        if flags & statvfs_flag:
            locked |= mount_flag
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked)


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(_text(target), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    machine = os.uname().machine.lower()
    number = _PIVOT_ROOT.get(machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown system call number on {machine}")
    _check(_libc.syscall(ctypes.c_long(number), _text(new_root), _text(put_old)), "pivot_root")


def drop_capabilities() -> None:
    """Empty the bounding set, so an ``exec`` (even as root of the namespace) gains none."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as file:
            last = int(file.read())
    except OSError:
        last = 63
    for capability in range(last + 1):
        _libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)


def die_with_parent() -> None:
    """SIGKILL this process when the thread that forked it ends."""
    _libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
