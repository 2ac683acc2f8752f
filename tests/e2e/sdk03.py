"""The a2a-sdk 0.3 client, as 0.3 users run it: in a venv of its own (its ``a2a``
package is not the 1.x SDK's that the test extra installs), driven by
``sdk03_driver.py`` in a subprocess that prints what it saw as JSON.

The venv is made on first use and kept inside the project's venv (``sys.prefix``), so
a fresh ``.venv`` (as in CI) starts clean and later runs reuse it; outside a venv it
lives under ``~/.cache/cleveragents``. A marker file written last says it is complete;
a lock keeps two pytest processes from building it at once. Where it can't be built
(no package index), the test skips, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SDK03_VERSION = "0.3.26"
# With its signing extra (PyJWT): the card signature tests run its verifier; and its
# grpc extra: the gRPC tests run its gRPC transport.
REQUIREMENT = f"a2a-sdk[signing,grpc]=={SDK03_VERSION}"
DRIVER = Path(__file__).with_name("sdk03_driver.py")
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 120


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _home() -> Path:
    tag = f"a2a-sdk-{SDK03_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}"
    if sys.prefix != sys.base_prefix:  # inside a venv: keep it beside, and go with it
        return Path(sys.prefix) / "test-clients" / tag
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cleveragents" / "test-clients" / tag


def _build(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, capture_output=True, timeout=INSTALL_TIMEOUT)
    python = home / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", REQUIREMENT],
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"pip install {REQUIREMENT} failed:\n{done.stderr[-2000:]}")


def sdk03_python() -> Path:
    """The interpreter of the 0.3 client's venv, built if need be."""
    home = _home()
    marker = home / "installed"
    if marker.is_file() and marker.read_text() == REQUIREMENT:
        return home / "bin" / "python"
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / (home.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.is_file() and marker.read_text() == REQUIREMENT):
            _build(home)
            marker.write_text(REQUIREMENT)
    return home / "bin" / "python"


def unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"CI=true runs every real-client test: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def sdk03() -> Path:
    try:
        return sdk03_python()
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        unavailable(f"the a2a-sdk {SDK03_VERSION} client could not be installed: {exc}")
        raise


async def run_driver(python: Path, scenario: str, **options: Any) -> dict[str, Any]:
    """Run one scenario of ``sdk03_driver.py``; its report."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    process = await asyncio.create_subprocess_exec(
        str(python), str(DRIVER), scenario, json.dumps(options), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"the 0.3 client's {scenario} did not finish in {RUN_TIMEOUT}s") from None
    assert process.returncode == 0, f"the 0.3 client's {scenario} failed:\n{err.decode()[-4000:]}"
    report = json.loads(out)
    assert report.pop("sdk_version") == SDK03_VERSION
    return report
