"""Each step of a descriptor walk (infra.workspace._dirfd): what a link, a FIFO or a
file found where a directory was expected does to it, on a real directory tree; and
that no descriptor outlives the operation that opened it."""

import errno
import os
import stat
import threading
import time

import pytest

from cleveragents.domain.errors import AuthorizationError, PlanError
from cleveragents.infra.workspace._dirfd import Dirs, SymlinkInPath
from cleveragents.infra.workspace._fs import NotRegularFile, write_atomic
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.diff import diff_overlay
from cleveragents.infra.workspace.journal import Applier
from cleveragents.infra.workspace.overlay import Overlay


@pytest.fixture
def outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_bytes(b"outside\n")
    return outside


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "f.txt").write_bytes(b"inside\n")
    (root / "a" / "b" / "g.txt").write_bytes(b"deep\n")
    return root


@pytest.fixture
def dirs(root):
    with Dirs(root) as opened:
        yield opened


def listing(directory):
    return sorted(p.name for p in directory.iterdir())


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- a link as the last component -------------------------------------------------

def test_a_link_as_the_last_component_is_never_followed(root, outside, dirs):
    os.symlink(outside / "f.txt", root / "a" / "file_link")
    os.symlink(outside, root / "a" / "dir_link")
    with pytest.raises(NotRegularFile):
        dirs.read("a/file_link")
    assert stat.S_ISLNK(dirs.lstat("a/file_link").st_mode)
    with pytest.raises(SymlinkInPath) as walked:
        dirs.dir_fd("a/dir_link")
    assert walked.value.filename == "a/dir_link"  # the relative path, never the server's
    # A write replaces the link itself; an unlink removes the link; the target stays.
    fd, name = dirs.parent("a/file_link")
    write_atomic(name, b"new\n", 0o644, durable=False, dir_fd=fd)
    assert (root / "a" / "file_link").read_bytes() == b"new\n" and not (root / "a" / "file_link").is_symlink()
    os.unlink("dir_link", dir_fd=dirs.dir_fd("a"))
    assert listing(outside) == ["f.txt"] and (outside / "f.txt").read_bytes() == b"outside\n"


# -- a link as a middle component ---------------------------------------------------

def test_a_link_as_a_middle_component_stops_the_walk(root, outside, dirs):
    os.symlink(outside, root / "a" / "out")
    (outside / ".f.txt.cleveragents-tmp-0123456789ab").write_bytes(b"not ours\n")
    for step in (lambda: dirs.read("a/out/f.txt"), lambda: dirs.lstat("a/out/f.txt"),
                 lambda: dirs.parent("a/out/new.txt", create={"a/out"}), lambda: dirs.fsync("a/out"),
                 lambda: dirs.rmdir("a/out/sub")):
        with pytest.raises(SymlinkInPath) as walked:
            step()
        assert walked.value.errno == errno.ELOOP and walked.value.filename == "a/out"
    assert dirs.remove_temp_files("a/out") == 0
    assert listing(outside) == [".f.txt.cleveragents-tmp-0123456789ab", "f.txt"]


def test_a_link_at_the_root_of_the_path_stops_the_walk_too(root, outside, dirs):
    os.symlink(outside, root / "top")
    with pytest.raises(SymlinkInPath):
        dirs.read("top/f.txt")


def test_names_that_could_climb_out_are_refused(dirs):
    for path in ("../outside/f.txt", "a/../../outside/f.txt", "a/./f.txt", "a//f.txt", "/etc/passwd", "", "a/"):
        with pytest.raises(OSError) as refused:
            dirs.parent(path)
        assert refused.value.errno == errno.EINVAL, path


def test_a_path_longer_than_the_os_allows_is_refused_as_the_os_would(dirs):
    with pytest.raises(OSError) as refused:
        dirs.parent("a/" * 3000 + "b", create={"a"})
    assert refused.value.errno == errno.ENAMETOOLONG


# -- a link replacing a directory between the open and the rename ------------------

def test_a_directory_swapped_for_a_link_after_its_open_keeps_the_writes_inside(root, outside, dirs):
    fd, name = dirs.parent("a/f.txt")
    os.rename(root / "a", root / "moved")  # the real directory, wherever it is now
    os.symlink(outside, root / "a")
    write_atomic(name, b"written\n", 0o644, durable=False, dir_fd=fd)
    assert (root / "moved" / "f.txt").read_bytes() == b"written\n"
    assert listing(outside) == ["f.txt"] and (outside / "f.txt").read_bytes() == b"outside\n"
    assert dirs.parent("a/f.txt")[0] == fd  # within the operation, the same directory
    with Dirs(root) as fresh, pytest.raises(SymlinkInPath):  # a new walk sees the link
        fresh.parent("a/f.txt")


def test_a_link_planted_where_a_directory_is_made_stops_the_walk(root, outside, dirs):
    os.symlink(outside, root / "new")  # after the check that found no "new", before the mkdir
    with pytest.raises(SymlinkInPath):
        dirs.parent("new/x.txt", create={"new"})
    assert listing(outside) == ["f.txt"]


# -- a FIFO -------------------------------------------------------------------------

def test_a_fifo_is_neither_read_nor_walked_into_and_nothing_waits(root, dirs):
    os.mkfifo(root / "a" / "pipe")
    started = time.monotonic()
    with pytest.raises(NotRegularFile):
        dirs.read("a/pipe")
    with pytest.raises(NotADirectoryError):
        dirs.dir_fd("a/pipe")
    assert dirs.read("a/pipe/x.txt") is None  # no such file: its directory is no directory
    assert time.monotonic() - started < 1


def test_an_apply_over_a_fifo_is_refused(root, tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    overlay = Overlay(root, blobs)
    overlay.write_bytes("a/f.txt", b"planned\n")
    (root / "a" / "f.txt").unlink()
    os.mkfifo(root / "a" / "f.txt")
    with pytest.raises(PlanError) as refused:
        Applier(root, blobs, tmp_path / "journal").apply("p1", overlay.entries(), force=True)
    assert refused.value.data == {"path": "a/f.txt", "reason": "not_a_regular_file"}
    assert stat.S_ISFIFO(os.lstat(root / "a" / "f.txt").st_mode)


# -- a directory where a file was ----------------------------------------------------

def test_a_directory_where_a_file_was(root, dirs):
    (root / "a" / "f.txt").unlink()
    (root / "a" / "f.txt").mkdir()
    (root / "a" / "f.txt" / "keep").write_bytes(b"keep\n")
    with pytest.raises(IsADirectoryError):
        dirs.read("a/f.txt")
    fd, name = dirs.parent("a/f.txt")
    with pytest.raises(OSError) as refused:
        write_atomic(name, b"x\n", 0o644, durable=False, dir_fd=fd)
    assert refused.value.errno in (errno.EISDIR, errno.ENOTEMPTY)
    assert listing(root / "a") == ["b", "f.txt"]  # no temp file left
    assert (root / "a" / "f.txt" / "keep").read_bytes() == b"keep\n"


def test_a_file_where_a_directory_was(root, dirs):
    (root / "a" / "b" / "g.txt").unlink()
    (root / "a" / "b").rmdir()
    (root / "a" / "b").write_bytes(b"a file now\n")
    assert dirs.read("a/b/g.txt") is None
    with pytest.raises(NotADirectoryError) as walked:
        dirs.parent("a/b/g.txt", create={"a/b"})
    assert walked.value.filename == "a/b"


# -- descriptors ---------------------------------------------------------------------

def test_a_walk_keeps_at_most_max_open_descriptors_and_closes_them_all(root):
    for i in range(20):
        (root / f"d{i}" / "sub").mkdir(parents=True)
    before = open_fds()
    with Dirs(root, max_open=4) as dirs:
        for i in range(20):
            assert dirs.dir_fd(f"d{i}/sub") is not None
            assert open_fds() <= before + 1 + 4  # the root and four directories
        dirs.forget("d19")
        assert dirs.read("d3/sub/none") is None
    assert open_fds() == before


def test_no_operation_leaks_a_descriptor(root, outside, tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    applier = Applier(root, blobs, tmp_path / "journal")

    def plan() -> Overlay:
        overlay = Overlay(root, blobs)
        for i in range(30):
            overlay.write_bytes(f"n{i % 7}/deep/f{i}.txt", b"new %d\n" % i)
        overlay.write_bytes("a/f.txt", b"changed\n")
        overlay.delete("a/b/g.txt")
        overlay.glob("**/*.txt")
        overlay.read_bytes("a/f.txt")
        overlay.mode("a/b/g.txt")
        return overlay

    plan()  # imports and caches settle before the count
    before = open_fds()
    overlay = plan()
    diff_overlay(overlay, root, blobs)
    checkpoint = applier.apply("p1", overlay.entries())
    applier.discard("p1")
    applier.rollback(checkpoint)
    applier.discard("p1")
    os.symlink(outside, root / "n0")  # refused, before and during
    with pytest.raises(AuthorizationError):
        applier.apply("p2", overlay.entries())
    os.unlink(root / "n0")
    applier.recover()
    assert open_fds() == before


def test_concurrent_walks_each_close_their_own(root):
    before = open_fds()
    errors = []

    def walk() -> None:
        try:
            for _ in range(200):
                with Dirs(root) as dirs:
                    dirs.read("a/b/g.txt")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=walk) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and open_fds() == before
