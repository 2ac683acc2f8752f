"""The whole package passes a strict type check: a change that loses a type fails here,
with mypy's report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRICT_PACKAGES = ["cleveragents"]


@pytest.mark.timeout(300)
def test_the_package_passes_mypy_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), *STRICT_PACKAGES],
        cwd=ROOT / "server", capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
