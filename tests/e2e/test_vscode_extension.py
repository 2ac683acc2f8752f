"""The VS Code extension (editors/vscode), built and tested the way its users get it:
``npm ci`` (kept in the checkout's node_modules while package-lock.json is unchanged),
``tsc``, ``vsce package``, then its ``node --test`` suites against this venv's real
``cleveragents-lsp``: over vscode-jsonrpc, and through vscode-languageclient with the
extension's activate() and commands behind a ``vscode`` module stand-in."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO

EXTENSION = REPO / "editors" / "vscode"
LOCK = EXTENSION / "package-lock.json"
INSTALL_STAMP = EXTENSION / "node_modules" / ".cleveragents-package-lock.sha256"
VSCE_FLAGS = ("--allow-missing-repository", "--skip-license")

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm are needed"),
    pytest.mark.timeout(300),
]


def server_path() -> str:
    beside_python = Path(sys.executable).with_name("cleveragents-lsp")
    found = str(beside_python) if beside_python.exists() else shutil.which("cleveragents-lsp")
    assert found, "cleveragents-lsp is not installed in this environment"
    return found


def run(command: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> str:
    """Runs ``command`` in the extension's directory; fails the test with its output."""
    try:
        done = subprocess.run(list(command), cwd=EXTENSION, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{' '.join(command)} took more than {timeout:g} s\n{expired.stdout or ''}\n{expired.stderr or ''}")
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    return done.stdout


@pytest.fixture(scope="module")
def built() -> Path:
    """node_modules installed from the lock file, and the TypeScript compiled to out/."""
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if not INSTALL_STAMP.is_file() or INSTALL_STAMP.read_text().strip() != digest:
        run(["npm", "ci", "--no-audit", "--no-fund"], timeout=240)
        INSTALL_STAMP.write_text(digest)
    run(["npx", "tsc", "-p", "."], timeout=120)
    assert (EXTENSION / "out" / "extension.js").is_file()
    return EXTENSION


def test_the_extension_packages_into_a_vsix(built: Path, tmp_path: Path) -> None:
    vsix = tmp_path / "cleveragents.vsix"
    run(["npx", "vsce", "package", *VSCE_FLAGS, "--out", str(vsix)], timeout=120)
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
    for expected in ("extension/package.json", "extension/out/extension.js", "extension/out/agentsClient.js",
                     "extension/node_modules/vscode-languageclient/package.json"):
        assert expected in names, f"{expected} missing from the .vsix"
    assert not any(name.startswith(("extension/src/", "extension/test/")) for name in names)


def test_the_node_suites_pass_against_the_real_server(built: Path) -> None:
    suites = sorted(str(path.relative_to(built)) for path in (built / "test").glob("*.test.js"))
    assert len(suites) >= 3, suites
    output = run(["node", "--test", *suites], timeout=120, env={"CLEVERAGENTS_LSP": server_path()})
    counts = {key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|cancelled) (\d+)$", output, re.M)}
    assert counts.get("fail") == 0 and counts.get("cancelled") == 0, output
    assert counts.get("pass", 0) >= 20 and counts["pass"] == counts["tests"], output
