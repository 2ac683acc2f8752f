"""The VS Code extension (editors/vscode), built and tested the way its users get it:
``npm ci`` (kept in the checkout's node_modules while package-lock.json is unchanged),
``tsc``, ``vsce package``, then its ``node --test`` suites against this venv's real
``cleveragents-lsp``: over vscode-jsonrpc, and through vscode-languageclient with the
extension's activate() and commands behind a ``vscode`` module stand-in. Last, the
``.vsix`` installed in a real VS Code (code-server, see tests/e2e/code_server.py) and used
through Chromium: session, message, plan, approve, roll back, undo."""

from __future__ import annotations

import re
import shutil
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e import code_server
from tests.npm_installs import npm_ci

EXTENSION = REPO / "editors" / "vscode"
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
    return code_server.run_checked(command, EXTENSION, timeout, env)


@pytest.fixture(scope="module")
def built() -> Path:
    """node_modules installed from the lock file, and the TypeScript compiled to out/."""
    npm_ci(EXTENSION, timeout=240)
    run(["npx", "tsc", "-p", "."], timeout=120)
    assert (EXTENSION / "out" / "extension.js").is_file()
    return EXTENSION


@pytest.fixture(scope="module")
def vsix(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    packaged = tmp_path_factory.mktemp("vsix") / "cleveragents.vsix"
    run(["npx", "vsce", "package", *VSCE_FLAGS, "--out", str(packaged)], timeout=120)
    return packaged


def test_the_extension_packages_into_a_vsix(vsix: Path) -> None:
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


WORKSPACE_FILES = {"app.py": "x = foo\nprint(x)\n", "b.txt": "foo b\n", "notes.md": "nothing to change\n"}
CODE_SERVER_SETTINGS = {
    "cleveragents.automationProfile": "supervised",
    # As on the desktop (the web's default saves a second after any change): what puts
    # an approved plan on disk is the extension, not VS Code's auto save.
    "files.autoSave": "off",
    "workbench.editor.enablePreview": False,  # the diff view must not replace app.py's tab
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "security.workspace.trust.enabled": False,
    "extensions.ignoreRecommendations": True,
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "telemetry.telemetryLevel": "off",
    "remote.autoForwardPorts": False,
    "git.enabled": False,
}


def extension_logs(user_data: Path, lines: int = 40) -> str:
    """The ends of the logs that say what the extension did: its output channels and the
    extension host's log (where an unhandled rejection lands). CI keeps only the output."""
    logs = sorted(user_data.glob("logs/*/exthost*/**/*CleverAgents*.log")) + sorted(
        user_data.glob("logs/*/exthost*/remoteexthost.log"))
    return "\n".join(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
                     for log in logs)


@pytest.mark.timeout(1200)  # a first run installs code-server and builds its native modules
def test_the_vsix_in_code_server(vsix: Path, tmp_path: Path) -> None:
    install = code_server.prepare()
    workspace, state, user_data, extensions, artifacts = (tmp_path / name for name in (
        "workspace", "state", "user-data", "extensions", "artifacts"))
    for directory in (workspace, state, user_data, extensions, artifacts):
        directory.mkdir()
    for name, text in WORKSPACE_FILES.items():
        (workspace / name).write_text(text)
    code_server.install_extension(install, vsix, user_data, extensions)
    settings = {**CODE_SERVER_SETTINGS, "cleveragents.serverPath": server_path(),
                "cleveragents.serverArgs": ["--workspace", str(workspace), "--state-dir", str(state)]}
    with code_server.running(install, workspace, user_data, extensions, settings, artifacts / "code-server.log") as url:
        done = code_server.run_driver(install, "codeServer.e2e.js", timeout=300, env={
            "CLEVERAGENTS_CODE_SERVER_URL": url, "CLEVERAGENTS_WORKSPACE": str(workspace),
            "CLEVERAGENTS_ARTIFACTS": str(artifacts)})
    counts = {key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", done.stdout, re.M)}
    assert done.returncode == 0 and counts.get("fail") == 0 and counts.get("skipped") == 0, (
        f"screenshots and logs in {artifacts}\n{done.stdout}\n{done.stderr}\n{extension_logs(user_data)}")
    assert counts.get("pass", 0) >= 8 and counts["pass"] == counts["tests"], done.stdout
