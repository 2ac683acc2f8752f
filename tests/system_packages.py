"""Debian packages that real-client tests need (Emacs and eglot, Chromium, ...).

``require_debian_packages`` installs what is missing when the tests run as root (as CI
does), with ``apt-get``, once per session. Elsewhere it skips the test with the command
to run; under ``CI=true`` a missing package fails the test instead of skipping it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading

import pytest

APT_TIMEOUT = 900
_APT = threading.Lock()  # dpkg takes one install at a time; the background preparation runs one too


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
    command = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT)
    if done.returncode != 0:  # a fresh machine may have no package lists yet
        subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=env, timeout=APT_TIMEOUT)
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT)
    if done.returncode != 0:
        return f"apt-get install {' '.join(packages)} failed: {done.stderr.strip()[-300:]}"
    return None


def require_debian_packages(*packages: str) -> None:
    missing = _missing(packages)
    if not missing:
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        with _APT:
            problem = _install(tuple(missing)) if _missing(packages) else None
        if problem is None and not _missing(packages):
            return
    else:
        problem = f"needs the Debian packages {', '.join(missing)}: sudo apt-get install {' '.join(missing)}"
    if _in_ci():
        pytest.fail(problem or "the packages did not install")
    pytest.skip(problem or "the packages did not install")
