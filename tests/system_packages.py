"""Debian packages that real-client tests need (Emacs and eglot, Chromium, ...).

``require_debian_packages`` installs what is missing when the tests run as root (as CI
does), with ``apt-get``, once per session. Elsewhere it skips the test with the command
to run; under ``CI=true`` a missing package fails the test instead of skipping it.

dpkg takes one install at a time, and the background preparation and the test processes
(``pytest -n``) may each want one: an install holds a lock file that every process of
the run shares, and apt-get also waits for dpkg's own lock rather than failing on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

APT_TIMEOUT = 900
_APT = threading.Lock()  # flock is per open file: threads of one process take this first
_APT_LOCK_FILE = Path(tempfile.gettempdir()) / "cleveragents-tests-apt.lock"
_WAIT_FOR_DPKG = ("-o", f"DPkg::Lock::Timeout={APT_TIMEOUT}")  # dpkg busy elsewhere on the machine


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _missing(packages: tuple[str, ...]) -> list[str]:
    if shutil.which("dpkg-query") is None:
        return list(packages)
    missing = []
    for package in packages:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
        if "install ok installed" not in done.stdout:
            missing.append(package)
    return missing


@functools.cache
def _install(packages: tuple[str, ...]) -> str | None:
    """``None`` once installed, else why they could not be."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", *_WAIT_FOR_DPKG, "install", "-y", "--no-install-recommends", *packages]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT)
    if done.returncode != 0:  # a fresh machine may have no package lists yet
        subprocess.run(["apt-get", *_WAIT_FOR_DPKG, "update"], capture_output=True, text=True, env=env, timeout=APT_TIMEOUT)
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT)
    if done.returncode != 0:
        return f"apt-get install {' '.join(packages)} failed: {done.stderr.strip()[-300:]}"
    return None


@contextlib.contextmanager
def _one_install_at_a_time() -> Iterator[None]:
    with _APT, open(_APT_LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def require_debian_packages(*packages: str) -> None:
    missing = _missing(packages)
    if not missing:
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        with _one_install_at_a_time():
            still_missing = tuple(_missing(packages))  # another process may have installed them meanwhile
            problem = _install(still_missing) if still_missing else None
        if problem is None and not _missing(packages):
            return
    else:
        problem = f"needs the Debian packages {', '.join(missing)}: sudo apt-get install {' '.join(missing)}"
    if _in_ci():
        pytest.fail(problem or "the packages did not install")
    pytest.skip(problem or "the packages did not install")
