"""Landlock, the Linux access-control LSM that an unprivileged process applies to itself.

A ruleset names the kinds of access it handles; everything of those kinds that no rule
grants is denied to the process and all it starts, for good. Rules grant access below
a directory (or to one file). From ABI 4 it also handles TCP bind and connect, and
from ABI 6 it scopes signals and abstract UNIX sockets to the sandbox.

Standard library only (ctypes): the sandbox launcher imports it without ``site``.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

# The syscall numbers are the same on every architecture (the generic table).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

# What a rule on a file (not a directory) may grant.
FILE_ACCESS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
READ_WRITE = (READ_ONLY | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
              | MAKE_SYM | REFER | TRUNCATE | IOCTL_DEV)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LandlockError(OSError):
    pass


def _call(number: int, *args: object) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        error = ctypes.get_errno()
        raise LandlockError(error, os.strerror(error))
    return int(result)


def abi_version() -> int:
    """The kernel's Landlock ABI: 0 when it has none, or it is not enabled at boot."""
    try:
        return _call(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except LandlockError:
        return 0


def handled_fs(abi: int) -> int:
    """Every filesystem access right the kernel's ABI knows."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class Ruleset:
    """A ruleset being built; ``restrict_self`` applies it to the calling thread (call it
    in the process about to ``exec``: the child inherits it)."""

    def __init__(self, abi: int, *, deny_tcp: bool) -> None:
        self.abi = abi
        self.fs = handled_fs(abi)
        net = NET_BIND_TCP | NET_CONNECT_TCP if deny_tcp and abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
        # The struct grew with the ABI: pass only the fields this kernel reads.
        if abi >= 6:
            attr = struct.pack("=QQQ", self.fs, net, scoped)
        elif abi >= 4:
            attr = struct.pack("=QQ", self.fs, net)
        else:
            attr = struct.pack("=Q", self.fs)
        self.fd = _call(_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))

    def allow(self, path: str, access: int) -> bool:
        """Grant ``access`` below ``path`` (only the file rights when it is a file).
        ``False`` when the path doesn't exist: there is nothing to grant."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                access &= FILE_ACCESS
            attr = struct.pack("=Qi", access & self.fs, fd)  # packed: no padding after the int
            _call(_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.c_char_p(attr),
                  ctypes.c_uint32(0))
        finally:
            os.close(fd)
        return True

    def restrict_self(self) -> None:
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            error = ctypes.get_errno()
            raise LandlockError(error, os.strerror(error))
        try:
            _call(_RESTRICT_SELF, ctypes.c_int(self.fd), ctypes.c_uint32(0))
        finally:
            os.close(self.fd)
