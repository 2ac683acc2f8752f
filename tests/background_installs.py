"""What the slow real-client tests install, prepared in the background while the rest
of the suite runs.

A fresh machine (CI) installs Debian's Emacs, Neovim and Chromium and builds
code-server before those tests can start: minutes of mostly waiting on the network and
the compiler. The session starts that work in a thread at a low CPU priority (its
subprocesses inherit it) and runs the tests that need it last; each test then finds its
install done, or waits for it under the same locks, and reports any failure itself. In a
parallel run (tests/parallel.py) the controller, which runs no tests, prepares it.
"""

from __future__ import annotations

import contextlib
import os
import threading

import pytest

# The test modules that need an install, and the packages they take.
NEEDS_INSTALL = ("test_vscode_extension.py", "test_emacs_eglot.py", "test_nvim_plugin.py")
DEBIAN_PACKAGES = ("emacs-nox", "elpa-eglot", "neovim")


def _prepare() -> None:
    with contextlib.suppress(OSError):  # nice 19 for this thread, so for what it starts
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    from tests.e2e import code_server
    from tests.system_packages import require_debian_packages

    for step in (lambda: require_debian_packages(*DEBIAN_PACKAGES), code_server.prepare):
        # A failure here is the test's to report: it runs the same step again.
        with contextlib.suppress(BaseException):
            step()


def _needs_install(nodeid: str) -> bool:
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1] in NEEDS_INSTALL


def order(items: list[pytest.Item]) -> None:
    """Moves the tests that need an install to the end."""
    items[:] = [item for item in items if not _needs_install(item.nodeid)] + [
        item for item in items if _needs_install(item.nodeid)]


_started = threading.Event()


def start(nodeids: list[str]) -> None:
    """Starts preparing the installs, once per run, if the tests to run need them."""
    needing = sum(1 for nodeid in nodeids if _needs_install(nodeid))
    # With nothing else to run there is nothing to overlap.
    if needing and len(nodeids) > needing and not _started.is_set():
        _started.set()
        threading.Thread(target=_prepare, name="background-installs", daemon=True).start()
