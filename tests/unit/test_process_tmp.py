"""The sweep of process directories left in the temporary directory: real directories,
locks held by real processes, a real link and (as root) a real other user."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cleveragents.infra import process_tmp

# Makes its process directory in TMPDIR, says where, and lives until stdin closes.
HOLDER = (
    "import sys\n"
    "from cleveragents.infra.process_tmp import new_dir\n"
    "print(new_dir('scratch'), flush=True)\n"
    "sys.stdin.read()\n"
)


def later() -> float:
    """A time at which a sweep finds every directory made so far old enough."""
    return time.time() + 2 * process_tmp.SWEEP_MIN_AGE


def holder(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process holding its directory, and that directory."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.stdout is not None
    scratch = Path(proc.stdout.readline().strip())
    assert scratch.is_dir() and scratch.parent.parent == tmp, scratch
    return proc, scratch.parent


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    directory = tmp_path / "tmp"
    directory.mkdir()
    return directory


def test_a_killed_process_directory_is_swept_and_a_living_one_kept(tmp):
    killed, killed_dir = holder(tmp)
    living, living_dir = holder(tmp)
    try:
        killed.kill()
        killed.communicate()
        assert killed_dir.is_dir(), "SIGKILL gives no chance to remove it: that is the case swept"
        assert process_tmp.sweep(str(tmp), later()) == [str(killed_dir)]
        assert not killed_dir.exists()
        assert living_dir.is_dir() and any(living_dir.iterdir())
    finally:
        living.kill()
        living.communicate()


def test_a_process_that_exits_removes_its_own(tmp):
    proc, directory = holder(tmp)
    proc.communicate("")
    assert proc.returncode == 0
    assert not directory.exists()


def test_a_young_abandoned_directory_is_left_for_a_later_sweep(tmp):
    killed, directory = holder(tmp)
    killed.kill()
    killed.communicate()
    assert process_tmp.sweep(str(tmp)) == []  # made just now: it may not be locked yet
    assert directory.is_dir()
    assert process_tmp.sweep(str(tmp), later()) == [str(directory)]


def test_a_link_of_that_name_is_not_followed(tmp, tmp_path):
    """Another local user may plant names in a shared /tmp: a link to a directory of
    ours must leave the directory whole."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    link = tmp / f"{process_tmp.PREFIX}planted"
    link.symlink_to(precious, target_is_directory=True)
    os.utime(precious, (0, 0))
    os.utime(link, (0, 0), follow_symlinks=False)
    assert process_tmp.sweep(str(tmp), later()) == []
    assert (precious / "keep.txt").read_text() == "mine" and link.is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another user's directory")
def test_another_users_directory_is_left_alone(tmp):
    other = tmp / f"{process_tmp.PREFIX}other"
    other.mkdir()
    (other / "file").write_text("theirs")
    os.chown(other / "file", 65534, 65534)
    os.chown(other, 65534, 65534)
    assert process_tmp.sweep(str(tmp), later()) == []
    assert (other / "file").read_text() == "theirs"
