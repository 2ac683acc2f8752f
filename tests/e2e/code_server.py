"""VS Code itself, as code-server (VS Code in the browser), for the end-to-end test of the
packaged extension; Debian's Chromium shows it, driven by puppeteer-core.

Everything comes from the registries: code-server and puppeteer-core from npm (pinned by
``editors/vscode/test/browser/package-lock.json``), Chromium, the Kerberos headers and
ripgrep from Debian. code-server's own postinstall can't run here: it downloads a ripgrep
build. So ``prepare()`` does its steps by hand: VS Code's modules from the package's
shrinkwrap with no scripts, Debian's ``rg`` where the download would have put it, the
native modules built against this Node (``npm rebuild``, with no prebuilt-binary
downloads tried), and the postinstall's links.

The install goes to ``.cache/vscode-browser/<key>/`` in the checkout, the key being a
digest of what it is built from (the lock file, this Node, the recipe): a second run
reuses it, and a fresh checkout, as in CI, builds it anew. It sits outside
``editors/vscode`` so that ``vsce package`` has no tree of 300 MB to walk.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conftest import REPO
from tests.system_packages import _in_ci, require_debian_packages

HARNESS = REPO / "editors" / "vscode" / "test" / "browser"
INSTALLS = REPO / ".cache" / "vscode-browser"
# Change when the steps of _install() change, so installs made by the old steps are redone.
RECIPE = "code-server-install-2"
NODE_MAJOR = "20"  # code-server 4.100 runs on Node 20 only
DEBIAN_PACKAGES = ("chromium", "libkrb5-dev", "ripgrep", "g++", "make")
DONE_MARK = ".installed"
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Install:
    """A finished install: its node_modules (for NODE_PATH) and the browser."""

    modules: Path
    chromium: Path

    @property
    def code_server(self) -> list[str]:
        return ["node", str(self.modules / "code-server" / "out" / "node" / "entry.js")]


def run_checked(command: Sequence[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    """Runs ``command`` in ``cwd``; fails the test with its output. Returns its stdout."""
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{' '.join(command)} in {cwd} took more than {timeout:g} s\n{expired.stdout or ''}"
                    f"\n{expired.stderr or ''}")
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} in {cwd} exited {done.returncode}\n--- stdout\n{done.stdout[-5000:]}"
                    f"\n--- stderr\n{done.stderr[-5000:]}")
    return done.stdout


def _unavailable(reason: str) -> NoReturn:
    """A real-client test that can't run skips, except in CI, where it fails."""
    if _in_ci():
        pytest.fail(reason)
    pytest.skip(reason)


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def _build_env() -> dict[str, str]:
    """npm's environment for building native modules with no network but the registry."""
    node = Path(shutil.which("node") or "node").resolve()
    prefix = node.parent.parent  # node-gyp downloads the headers unless they are here
    if not (prefix / "include" / "node" / "node.h").is_file():
        pytest.fail(f"no Node headers under {prefix}/include/node: native modules can't be built")
    return {
        "npm_config_nodedir": str(prefix),
        # node-pty's postinstall runs `npx node-gyp`: let npx take node-gyp from the registry.
        "npm_config_yes": "true",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
    }


def _from_source(package: str) -> dict[str, str]:
    """Builds ``package`` without first trying its prebuilt-binary download (prebuild-install
    and node-pre-gyp take a package name here). Not "true": @parcel/watcher would then
    build itself too, instead of using the binary its npm package ships."""
    return {**_build_env(), "npm_config_build_from_source": package}


def _key() -> str:
    lock = (HARNESS / "package-lock.json").read_bytes()
    return hashlib.sha256(lock + f"\n{_node_version()}\n{RECIPE}".encode()).hexdigest()[:16]


def _link(target: Path | str, link: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _install(root: Path) -> None:
    env = _build_env()
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HARNESS / name, root / name)
    run_checked(["npm", "ci", "--ignore-scripts"], root, timeout=600, env=env)
    vscode = root / "node_modules" / "code-server" / "lib" / "vscode"
    # What code-server's postinstall.sh does, without its downloads. `npm install`, as it
    # does: the package's shrinkwrap pins the modules but misses one (tslib), so `npm ci` refuses.
    run_checked(["npm", "install", "--ignore-scripts", "--omit=dev"], vscode, timeout=600, env=env)
    ripgrep = vscode / "node_modules" / "@vscode" / "ripgrep" / "bin"
    ripgrep.mkdir(parents=True, exist_ok=True)
    _link(shutil.which("rg") or "/usr/bin/rg", ripgrep / "rg")
    run_checked(["npm", "rebuild"], vscode, timeout=900, env=_from_source("kerberos"))
    run_checked(["npm", "rebuild", "argon2"], root, timeout=300, env=_from_source("argon2"))
    _link("node_modules", vscode / "node_modules.asar")
    _link("code-linux.sh", vscode / "bin" / "remote-cli" / "code-server")
    _link("browser-linux.sh", vscode / "bin" / "helpers" / "browser.sh")


def prepare() -> Install:
    """code-server and puppeteer-core, installed once per key, and Debian's Chromium."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unavailable("node and npm are needed")
    if not _node_version().startswith(f"v{NODE_MAJOR}."):
        _unavailable(f"code-server 4.100 needs Node {NODE_MAJOR}, this is {_node_version()}")
    require_debian_packages(*DEBIAN_PACKAGES)
    INSTALLS.mkdir(parents=True, exist_ok=True)
    root = INSTALLS / _key()
    with open(INSTALLS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run in this checkout may be installing
        if not (root / DONE_MARK).is_file():
            for old in INSTALLS.iterdir():  # an unfinished install, or one for other versions
                if old.is_dir():
                    shutil.rmtree(old)
            root.mkdir()
            _install(root)
            (root / DONE_MARK).write_text(f"{_node_version()}\n{RECIPE}\n")
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed but not on PATH"
    return Install(root / "node_modules", Path(chromium))


def install_extension(install: Install, vsix: Path, user_data: Path, extensions: Path) -> None:
    run_checked([*install.code_server, "--user-data-dir", str(user_data), "--extensions-dir", str(extensions),
                 "--install-extension", str(vsix)], user_data, timeout=120)
    installed = [path.name for path in extensions.iterdir() if path.is_dir()]
    assert any(name.startswith("cleveragents.cleveragents-vscode-") for name in installed), installed


@contextlib.contextmanager
def running(install: Install, workspace: Path, user_data: Path, extensions: Path, settings: dict[str, object],
            log: Path) -> Iterator[str]:
    """code-server on a free loopback port, no auth, with these user settings; yields its URL.
    It is stopped with everything it started (the extension host, the language server)."""
    (user_data / "User").mkdir(parents=True, exist_ok=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    config = user_data / "code-server.yaml"
    config.write_text("bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n")
    command = [*install.code_server, "--config", str(config), "--user-data-dir", str(user_data),
               "--extensions-dir", str(extensions), "--disable-telemetry", "--disable-update-check",
               "--disable-workspace-trust", "--disable-getting-started-override", "--ignore-last-opened",
               str(workspace)]
    with open(log, "wb") as output:
        process = subprocess.Popen(command, cwd=workspace, stdout=output, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        yield _wait_for_url(process, log)
    finally:
        _stop(process)


def _wait_for_url(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = re.search(r"HTTP server listening on (http://127\.0\.0\.1:\d+/)", log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            pytest.fail(f"code-server exited {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)
    pytest.fail(f"code-server did not listen within {START_TIMEOUT:g} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM to the process group, then SIGKILL to whatever is left of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):  # children that outlived their parent
        os.killpg(process.pid, signal.SIGKILL)


def run_driver(install: Install, script: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Runs a browser driver of ``HARNESS`` with ``node --test``, its modules from the install.
    On a timeout it gets SIGTERM first, on which puppeteer closes the browser it started
    (Chromium runs in a process group of its own)."""
    command = ["node", "--test", "--test-reporter=tap", script]
    process = subprocess.Popen(command, cwd=HARNESS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **env, "NODE_PATH": str(install.modules),
                                    "CLEVERAGENTS_CHROMIUM": str(install.chromium)},
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} took more than {timeout:g} s\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
