"""How the suite shares its processes when it runs in parallel (pytest-xdist's ``-n``,
on by default: ``pyproject.toml``'s addopts).

Each worker process runs its own session: its own session fixtures (a PostgreSQL server
per worker, databases named by pid) and its own module fixtures. The tests of a module
whose own fixtures outlive one test (a server per module, a venv per session) go to
one worker together, so that work is done once; every other test is scheduled alone, in
collection order (the tests that wait for the background installs come last). Installs
that outlive the run (the Debian packages, code-server, the a2a-sdk 0.3 venv) take
cross-process locks and leave a marker when done, and the background preparation runs
once, in the controller.

A test marked ``serial`` measures time (a latency bound, a kill at a moment) and would
flake with another worker's load on the same CPUs: those tests run last, on one worker,
once the others have finished.

The workers know which modules go together (their fixtures); the controller schedules.
xdist's own channel for that (``xdist_group`` marks in the node ids) no longer reaches
the controller on current pytest, so the workers write the modules to a file the
controller names (``--dist loadgroup`` here means this scheduling).

``-n auto`` means one worker per CPU here, at least two: the suite mostly waits on
subprocesses (servers, editors, installs), and two workers on one CPU still overlap
that waiting. Run ``-n 0`` for a serial run (``--pdb`` implies it).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

MAX_WORKERS = 4  # past this, more PostgreSQL servers and interpreters than the tests gain
_GROUPS_DIR = "cleveragents_groups_dir"  # the controller's directory, in each worker's input
_GROUPS_FILE = "module-groups.json"
SERIAL = "serial"  # the marker, and the scope of the one unit of work all serial tests make


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def worker_count() -> int:
    return max(2, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def modules_with_shared_fixtures(items: list[pytest.Item]) -> list[str]:
    """The modules (node ids) whose tests use a fixture of their own module scoped
    wider than a test."""
    modules = set()
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        fixtures = getattr(item, "_fixtureinfo", None)
        if module in modules or fixtures is None:
            continue
        if any(definitions[-1].scope != "function" and definitions[-1].baseid.split("::", 1)[0] == module
               for definitions in fixtures.name2fixturedefs.values() if definitions):
            modules.add(module)
    return sorted(modules)


def is_serial(item: pytest.Item) -> bool:
    return item.get_closest_marker(SERIAL) is not None


def order_serial_last(items: list[pytest.Item]) -> None:
    items[:] = [item for item in items if not is_serial(item)] + [item for item in items if is_serial(item)]


def share_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker: tells the controller which modules go to one worker, and which
    tests run alone."""
    directory = getattr(config, "workerinput", {}).get(_GROUPS_DIR)
    if directory is None:
        return
    groups = {"modules": modules_with_shared_fixtures(items), SERIAL: [item.nodeid for item in items if is_serial(item)]}
    written = Path(directory) / f"{_GROUPS_FILE}.{os.getpid()}"
    written.write_text(json.dumps(groups))
    os.replace(written, Path(directory) / _GROUPS_FILE)  # every worker collects the same tests


class Controller:
    """The controller's side: a directory for the workers' file, and the scheduler."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="cleveragents-test-groups-"))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_GROUPS_DIR] = str(self.directory)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getoption("dist") != "loadgroup":
            return None
        from xdist.scheduler import LoadScopeScheduling

        groups_file = self.directory / _GROUPS_FILE

        class ModuleGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
            """A grouped module is one unit of work, the serial tests are one, last; any
            other test is a unit alone."""

            groups: dict[str, frozenset[str]] | None = None

            def _split_scope(self, nodeid: str) -> str:
                if self.groups is None:  # first asked once every worker has collected
                    found = json.loads(groups_file.read_text()) if groups_file.is_file() else {}
                    self.groups = {name: frozenset(found.get(name, ())) for name in ("modules", SERIAL)}
                if nodeid in self.groups[SERIAL]:
                    return SERIAL
                module = nodeid.split("::", 1)[0]
                return module if module in self.groups["modules"] else nodeid

            def _assign_work_unit(self, node: Any) -> None:
                if next(iter(self.workqueue)) != SERIAL:
                    return super()._assign_work_unit(node)
                others = [other for other in self.assigned_work if other is not node and not other.shutting_down]
                # A worker keeps its last test until it gets more work or is shut down.
                if any(self._pending_of(self.assigned_work[other]) > 1 for other in others):
                    return None  # one of those calls this again when its work is nearly done
                super()._assign_work_unit(node)
                for other in others:  # nothing is left for them: their last test runs now
                    other.shutdown()
                return None

        return ModuleGroupScheduling(config, log)

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
