"""The plan overlay (infra.workspace.overlay) and its blob store, on real directories."""

import os
import stat
import threading
from dataclasses import replace

import pytest

from cleveragents.domain.errors import (
    AuthorizationError,
    BudgetExceededError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.plan_files import OverlayRecord
from cleveragents.infra.workspace._fs import NotRegularFile, TooLarge, read_regular
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.overlay import Overlay


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "README.md").write_bytes(b"hello\n")
    (root / "src" / "a.py").write_bytes(b"a = 1\n")
    (root / "src" / "pkg" / "b.py").write_bytes(b"b = 2\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_bytes(b"[core]\n")
    (root / ".env").write_bytes(b"TOKEN=x\n")
    return root


@pytest.fixture
def blobs(tmp_path):
    return BlobStore(tmp_path / "blobs")


@pytest.fixture
def overlay(root, blobs):
    return Overlay(root, blobs)


def snapshot(root):
    return {p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mode) for p in root.rglob("*") if p.is_file()}


def test_blob_store_is_content_addressed_and_whole(blobs):
    digest = blobs.put(b"data")
    assert digest == BlobStore.digest_of(b"data")
    assert blobs.path(digest) == blobs.root / digest[:2] / digest[2:]
    assert blobs.get(digest) == b"data" and blobs.has(digest)
    assert blobs.put(b"data") == digest
    assert [p.name for p in blobs.root.rglob("*") if p.is_file()] == [digest[2:]]
    with pytest.raises(ResourceNotFoundError) as missing:
        blobs.get("0" * 64)
    assert missing.value.data == {"blob": "0" * 64}
    with pytest.raises(ValidationError):
        blobs.path("../../etc/passwd")


def test_blob_store_from_many_threads(blobs):
    payloads = [bytes([i]) * 1000 for i in range(32)]
    threads = [threading.Thread(target=lambda: [blobs.put(p) for p in payloads]) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(blobs.get(BlobStore.digest_of(p)) == p for p in payloads)
    assert blobs.remove_temp_files() == 0


def test_reads_see_the_overlay_over_the_disk_which_stays_untouched(root, overlay):
    before = snapshot(root)
    assert overlay.read_bytes("src/a.py") == b"a = 1\n"
    overlay.write_bytes("src/a.py", b"a = 10\n")
    overlay.write_bytes("new/c.py", b"c = 3\n")
    overlay.delete("README.md")
    assert overlay.read_bytes("src/a.py") == b"a = 10\n"
    assert overlay.read_bytes("new/c.py") == b"c = 3\n"
    assert overlay.exists("new/c.py") and not overlay.exists("README.md")
    with pytest.raises(FileNotFoundError):
        overlay.read_bytes("README.md")
    with pytest.raises(FileNotFoundError):
        overlay.delete("README.md")
    assert snapshot(root) == before
    (root / "src" / "pkg" / "b.py").write_bytes(b"b = 20\n")
    assert overlay.read_bytes("src/pkg/b.py") == b"b = 20\n"  # not cached


def test_entries_record_base_digests_and_modes(root, overlay):
    overlay.write_bytes("run.sh", b"#!/bin/sh\necho hi\n")
    overlay.write_bytes("run.sh", b"#!/bin/sh\necho hello\n")
    overlay.write_bytes("tool.py", b"x\n")
    overlay.write_bytes("exec.py", b"y\n", mode=0o700)
    entries = {e.path: e for e in overlay.entries()}
    assert entries["run.sh"].base == BlobStore.digest_of(b"#!/bin/sh\n")
    assert entries["run.sh"].mode == 0o755 and overlay.mode("run.sh") == 0o755
    assert entries["tool.py"].base is None and entries["tool.py"].mode == 0o644
    assert overlay.mode("exec.py") == 0o700
    assert overlay.mode("missing.py") is None and overlay.mode("README.md") == 0o644
    assert overlay.changed_paths() == ["exec.py", "run.sh", "tool.py"]
    assert overlay.files_changed == 3
    assert overlay.bytes_written == len(b"#!/bin/sh\necho hi\n") + len(b"#!/bin/sh\necho hello\n") + 2 + 2
    with pytest.raises(ValidationError):
        overlay.write_bytes("x.py", b"", mode=0o4755)


def test_absolute_paths_inside_the_root_become_relative(root, overlay):
    overlay.write_bytes(str(root / "src" / "a.py"), b"abs\n")
    assert overlay.changed_paths() == ["src/a.py"]
    with pytest.raises(AuthorizationError) as outside:
        overlay.read_bytes(str(root.parent / "elsewhere.txt"))
    assert outside.value.data["reason"] == "outside_workspace"


@pytest.mark.parametrize(("path", "reason"), [
    ("../outside.txt", "outside_workspace"),
    ("src/../../outside.txt", "outside_workspace"),
    ("/etc/passwd", "outside_workspace"),
    (".git/config", "protected"),
    (".cleveragents/state.db", "protected"),
    (".env", "protected_path"),
    ("keys/deploy.pem", "protected_path"),
])
def test_refused_paths_record_nothing(root, overlay, path, reason):
    for attempt, args in ((overlay.write_bytes, (path, b"x")), (overlay.read_bytes, (path,)),
                          (overlay.delete, (path,)), (overlay.exists, (path,))):
        with pytest.raises(AuthorizationError) as caught:
            attempt(*args)
        assert (caught.value.data["path"], caught.value.data["reason"]) == (path, reason)
    assert overlay.entries() == []
    assert not (root.parent / "outside.txt").exists()


def test_symlink_escapes_are_refused(tmp_path, root, overlay):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"top secret")
    os.symlink(outside / "secret.txt", root / "leak.txt")
    os.symlink(outside, root / "linkdir")
    os.symlink(root / ".git" / "config", root / "notes.txt")
    for path in ("leak.txt", "linkdir/secret.txt", "linkdir/new.txt"):
        for attempt, args in ((overlay.read_bytes, (path,)), (overlay.write_bytes, (path, b"x"))):
            with pytest.raises(AuthorizationError) as caught:
                attempt(*args)
            assert caught.value.data == {"path": path, "reason": "symlink_escape"}
            assert str(outside) not in str(caught.value.data)
    with pytest.raises(AuthorizationError) as protected:
        overlay.write_bytes("notes.txt", b"x")
    assert protected.value.data["reason"] == "protected"
    assert overlay.entries() == []
    assert (outside / "secret.txt").read_bytes() == b"top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_write_through_an_inside_symlink_lands_on_its_target(root, overlay):
    os.symlink("src/a.py", root / "alias.py")
    os.symlink("src", root / "srclink")
    overlay.write_bytes("alias.py", b"via link\n")
    overlay.write_bytes("srclink/pkg/b.py", b"via dir link\n")
    assert overlay.changed_paths() == ["src/a.py", "src/pkg/b.py"]
    assert overlay.read_bytes("src/a.py") == b"via link\n"
    assert overlay.read_bytes("alias.py") == b"via link\n"


def test_writes_that_apply_could_not_carry_out_are_refused(overlay):
    with pytest.raises(ValidationError) as below_file:
        overlay.write_bytes("README.md/x", b"x")
    assert below_file.value.data == {"path": "README.md/x", "reason": "parent_is_file", "parent": "README.md"}
    with pytest.raises(ValidationError) as on_dir:
        overlay.write_bytes("src", b"x")
    assert on_dir.value.data["reason"] == "is_directory"
    overlay.delete("README.md")
    overlay.write_bytes("README.md/x", b"now a directory\n")
    assert overlay.read_bytes("README.md/x") == b"now a directory\n"


def test_limits_refuse_before_recording(root, blobs):
    overlay = Overlay(root, blobs, GuardPolicy(max_files_changed=2, max_bytes_written=10))
    overlay.write_bytes("a.txt", b"12345")
    overlay.delete("README.md")
    with pytest.raises(BudgetExceededError) as files:
        overlay.write_bytes("c.txt", b"1")
    assert files.value.data == {"limit": "max_files_changed", "max": 2, "path": "c.txt"}
    overlay.write_bytes("a.txt", b"123")  # a path already changed costs no new file
    with pytest.raises(BudgetExceededError) as size:
        overlay.write_bytes("a.txt", b"123")
    assert size.value.data == {"limit": "max_bytes_written", "max": 10, "path": "a.txt"}
    assert overlay.read_bytes("a.txt") == b"123"
    assert overlay.changed_paths() == ["README.md", "a.txt"] and overlay.bytes_written == 8


def test_glob_merges_disk_and_overlay_and_hides_private_paths(root, overlay):
    overlay.write_bytes("src/pkg/new.py", b"")
    overlay.write_bytes("top.py", b"")
    overlay.delete("src/a.py")
    (root / "sub").mkdir()
    (root / "sub" / ".git").mkdir()
    (root / "sub" / ".git" / "x.py").write_bytes(b"")
    (root / "sub" / "server.key").write_bytes(b"")
    assert overlay.glob("**/*.py") == ["src/pkg/b.py", "src/pkg/new.py", "top.py"]
    assert overlay.glob("*.py") == ["top.py"]
    assert overlay.glob("src/*.py") == []
    assert overlay.glob("src/**") == ["src/pkg/b.py", "src/pkg/new.py"]
    assert overlay.glob("**") == ["README.md", "run.sh", "src/pkg/b.py", "src/pkg/new.py", "top.py"]
    assert overlay.glob(".git/*") == [] and overlay.glob("**/*.key") == []
    with pytest.raises(AuthorizationError):
        overlay.glob("../**")


def test_glob_does_not_follow_directory_symlinks_or_list_escaping_links(tmp_path, root, overlay):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.py").write_bytes(b"")
    os.symlink(outside, root / "linked")
    os.symlink(root / "src", root / "loop")
    os.symlink(outside / "o.py", root / "escape.py")
    os.symlink("src/a.py", root / "inside.py")
    assert overlay.glob("**/*.py") == ["inside.py", "src/a.py", "src/pkg/b.py"]


def test_records_round_trip(root, blobs, overlay):
    overlay.write_bytes("src/a.py", b"a = 10\n")
    overlay.write_bytes("new.py", b"n\n", mode=0o600)
    overlay.delete("README.md")
    records = overlay.to_records()
    assert records[0].to_dict() == {"path": "README.md", "blob": None, "mode": None,
                                    "base": BlobStore.digest_of(b"hello\n"), "written": 0,
                                    "base_mode": stat.S_IMODE((root / "README.md").stat().st_mode)}
    assert records[1].base_mode is None  # new.py did not exist
    assert [OverlayRecord.from_dict(r.to_dict()) for r in records] == records
    rebuilt = Overlay.from_records(root, blobs, None, records)
    assert rebuilt.entries() == overlay.entries()
    assert rebuilt.bytes_written == overlay.bytes_written
    assert rebuilt.read_bytes("src/a.py") == b"a = 10\n" and not rebuilt.exists("README.md")
    with pytest.raises(ValidationError) as bad:
        OverlayRecord.from_dict({"path": "x"})
    assert bad.value.data == {"field": "records"}
    for base_mode in (-1, 0o10000, "644", True):
        with pytest.raises(ValidationError):
            OverlayRecord.from_dict({**records[1].to_dict(), "base_mode": base_mode})
        with pytest.raises(ValidationError) as bad:
            Overlay.from_records(root, blobs, None, [records[0], replace(records[1], base_mode=base_mode)])
        assert bad.value.data == {"field": "records", "index": 1}


def test_concurrent_writers_are_all_recorded(overlay):
    def write(n):
        for i in range(50):
            overlay.write_bytes(f"t{n}/f{i}.txt", f"{n}-{i}".encode())
    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlay.files_changed == 200
    assert overlay.read_bytes("t3/f49.txt") == b"3-49"


# --- reads that must not block or flood ------------------------------------------------

def outcome_within(call, fifo, seconds: float = 5.0):
    """``call()``'s result or exception; fails (instead of hanging the suite) when
    it blocks opening ``fifo``."""
    box: list = []

    def target():
        try:
            box.append(call())
        except Exception as exc:  # handed to the test's thread
            box.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # lets the blocked open() return
        pytest.fail("blocked on a FIFO")
    return box[0]


def test_reading_a_fifo_is_refused_without_blocking(root, overlay):
    os.mkfifo(root / "pipe")
    refused = outcome_within(lambda: overlay.read_bytes("pipe"), root / "pipe")
    assert isinstance(refused, ValidationError)
    assert refused.data == {"path": "pipe", "reason": "not_a_regular_file"}
    with pytest.raises(IsADirectoryError):
        overlay.read_bytes("src")


def test_reads_over_max_read_bytes_are_refused(root, blobs):
    overlay = Overlay(root, blobs, GuardPolicy(max_read_bytes=6))
    assert overlay.read_bytes("README.md") == b"hello\n"  # exactly the limit
    (root / "big.txt").write_bytes(b"1234567")
    with pytest.raises(BudgetExceededError) as on_disk:
        overlay.read_bytes("big.txt")
    assert on_disk.value.data == {"limit": "max_read_bytes", "max": 6, "path": "big.txt", "size": 7}
    overlay.write_bytes("mine.txt", b"12345678")
    with pytest.raises(BudgetExceededError) as written:
        overlay.read_bytes("mine.txt")
    assert written.value.data == {"limit": "max_read_bytes", "max": 6, "path": "mine.txt", "size": 8}


def test_the_file_reader_does_not_follow_a_last_symlink(tmp_path, root):
    """The overlay reads resolved paths; a link there was swapped in after the check."""
    (tmp_path / "outside.txt").write_bytes(b"outside\n")
    os.symlink(tmp_path / "outside.txt", root / "swapped")
    with pytest.raises(NotRegularFile):
        read_regular(root / "swapped")
    with pytest.raises(TooLarge) as too_large:
        read_regular(root / "README.md", limit=5)
    assert (too_large.value.limit, too_large.value.info.st_size) == (5, 6)
    assert read_regular(root / "README.md", limit=6)[0] == b"hello\n"
