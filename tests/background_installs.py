"""What the slow real-client tests install, prepared in the background while the rest
of the suite runs.

A fresh machine (CI) installs Debian's Emacs, Neovim and Chromium and builds
code-server before those tests can start: minutes of mostly waiting on the network and
the compiler. The session starts that work in a thread at a low CPU priority (its
subprocesses inherit it) and runs the tests that need it last; each test then finds its
install done, or waits for it under the same locks, and reports any failure itself.
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


def order_and_start(items: list[pytest.Item]) -> None:
    """Moves the tests that need an install to the end and starts preparing it."""
    needing = [item for item in items if item.path.name in NEEDS_INSTALL]
    if not needing:
        return
    items[:] = [item for item in items if item.path.name not in NEEDS_INSTALL] + needing
    if len(items) > len(needing):  # with nothing else to run there is nothing to overlap
        threading.Thread(target=_prepare, name="background-installs", daemon=True).start()
