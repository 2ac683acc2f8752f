"""Fresh virtual environments, for tests that run the package as a user installs it.

``make_venv`` makes one; ``pip_install`` installs into it with the venv's own pip, or,
in a venv made without pip (faster: no ensurepip), with this interpreter's pip aimed
at it (``pip --python``). pip keeps the host's settings and cache, so a reinstall
of what the suite's venv already has is quick.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

VENV_TIMEOUT = 120


def host_env() -> dict[str, str]:
    """This process's environment without what would point a child at the suite's venv
    or its settings."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("CLEVERAGENTS_") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}


def make_venv(path: Path, *, with_pip: bool = True) -> Path:
    """A new venv at ``path``; its bin directory."""
    command = [sys.executable, "-m", "venv", str(path)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(command, check=True, capture_output=True, timeout=VENV_TIMEOUT)
    return path / "bin"


def pip_install(bin_dir: Path, args: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                timeout: float) -> subprocess.CompletedProcess[str]:
    """``pip install ARGS`` into the venv of ``bin_dir``; the finished process."""
    own = bin_dir / "pip"
    pip = [str(own)] if own.exists() else [sys.executable, "-m", "pip", "--python", str(bin_dir / "python")]
    return subprocess.run([*pip, "install", *args], cwd=cwd, env=dict(env) if env is not None else host_env(),
                          capture_output=True, text=True, timeout=timeout)
