"""What the server and ``launcher.py`` exchange: the plan going in, a setup failure
coming back, and the run directory left behind."""

from __future__ import annotations

import contextlib
import marshal
import os
import shutil
import stat
import struct
from pathlib import Path
from typing import Any

LAUNCHER = str(Path(__file__).with_name("launcher.py"))


def encode_spec(spec: dict[str, Any]) -> bytes:
    """The launcher's plan as it reads it: a length, then ``marshal`` (no import needed)."""
    body = marshal.dumps(spec)
    return struct.pack("=I", len(body)) + body


def read_failure(status_read: int) -> tuple[str, str] | None:
    """``(stage, message)`` when the launcher reported a setup failure on its status
    pipe (read once it has exited, so the pipe holds all it will ever hold)."""
    os.set_blocking(status_read, False)
    try:
        data = os.read(status_read, 65536)
    except BlockingIOError:
        return None
    if not data:
        return None
    stage, _, message = data.decode(errors="replace").partition("\t")
    return stage, message


def remove_tree(path: str) -> None:
    """Remove a run directory; overlayfs leaves a directory of mode 000 in ``work``."""
    for current, directories, _ in os.walk(path):
        for name in directories:
            full = os.path.join(current, name)
            if not os.path.islink(full):
                with contextlib.suppress(OSError):
                    os.chmod(full, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)
