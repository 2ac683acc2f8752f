"""The overlay's diff against the workspace (infra.workspace.diff)."""

import os
import shutil
import subprocess

import pytest

from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.diff import diff_overlay
from cleveragents.infra.workspace.overlay import Overlay


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "mod.txt").write_bytes(b"".join(b"line %d\n" % i for i in range(1, 21)))
    (root / "gone.txt").write_bytes(b"bye\n")
    (root / "tool.sh").write_bytes(b"echo\n")
    (root / "img.bin").write_bytes(b"\x89PNG\x00\x01")
    return root


@pytest.fixture
def overlay(root, tmp_path):
    return Overlay(root, BlobStore(tmp_path / "blobs"))


def diff(overlay, **kw):
    return diff_overlay(overlay, overlay.root, overlay.blobs, **kw)


def by_path(result):
    return {f["path"]: f for f in result["files"]}


def test_added_modified_deleted(overlay):
    lines = [b"line %d\n" % i for i in range(1, 21)]
    lines[1], lines[15] = b"LINE 2\n", b"LINE 16\n"
    overlay.write_bytes("mod.txt", b"".join(lines))
    overlay.write_bytes("new.txt", b"one\ntwo\n")
    overlay.delete("gone.txt")
    result = diff(overlay)
    files = by_path(result)
    assert [f["path"] for f in result["files"]] == ["gone.txt", "mod.txt", "new.txt"]
    assert files["new.txt"] | {"hunks": None} == {
        "path": "new.txt", "status": "added", "binary": False, "old_mode": None, "new_mode": 0o644,
        "additions": 2, "deletions": 0, "hunks": None}
    assert files["new.txt"]["hunks"] == [{"old_start": 0, "old_lines": 0, "new_start": 1, "new_lines": 2,
                                          "header": "@@ -0,0 +1,2 @@", "lines": ["+one", "+two"]}]
    assert files["gone.txt"]["status"] == "deleted" and files["gone.txt"]["new_mode"] is None
    assert files["gone.txt"]["hunks"][0]["header"] == "@@ -1 +0,0 @@"
    modified = files["mod.txt"]
    assert modified["status"] == "modified" and (modified["additions"], modified["deletions"]) == (2, 2)
    assert [h["header"] for h in modified["hunks"]] == ["@@ -1,5 +1,5 @@", "@@ -13,7 +13,7 @@"]
    assert modified["hunks"][0]["lines"] == [" line 1", "-line 2", "+LINE 2", " line 3", " line 4", " line 5"]
    assert result["stats"] == {"files": 3, "additions": 4, "deletions": 3}
    text = result["diff"]
    assert "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n" in text
    assert "deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" in text
    assert "--- a/mod.txt\n+++ b/mod.txt\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+LINE 2\n" in text


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_text_is_a_patch_git_applies(root, overlay, tmp_path):
    overlay.write_bytes("mod.txt", b"changed\n")
    overlay.write_bytes("dir/new.txt", b"no newline")
    overlay.delete("gone.txt")
    patch = tmp_path / "p.diff"
    patch.write_text(diff(overlay)["diff"])
    subprocess.run(["git", "apply", str(patch)], cwd=root, check=True, capture_output=True)
    assert (root / "mod.txt").read_bytes() == b"changed\n"
    assert (root / "dir" / "new.txt").read_bytes() == b"no newline"
    assert not (root / "gone.txt").exists()


def test_unchanged_content_is_not_listed(overlay):
    overlay.write_bytes("tool.sh", b"echo\n")
    overlay.write_bytes("tmp.txt", b"x")
    overlay.delete("tmp.txt")
    assert diff(overlay) == {"diff": "", "files": [], "stats": {"files": 0, "additions": 0, "deletions": 0}}


def test_binary_files_have_no_hunks(overlay):
    overlay.write_bytes("img.bin", b"\x89PNG\x00\x02")
    overlay.write_bytes("latin1.txt", "caf\xe9".encode("latin-1"))
    files = by_path(diff(overlay))
    assert files["img.bin"]["binary"] and files["img.bin"]["hunks"] == []
    assert files["latin1.txt"]["binary"] and files["latin1.txt"]["status"] == "added"
    assert "Binary files a/img.bin and b/img.bin differ\n" in diff(overlay)["diff"]
    assert "Binary files /dev/null and b/latin1.txt differ\n" in diff(overlay)["diff"]


def test_missing_trailing_newline_is_marked(overlay):
    overlay.write_bytes("gone.txt", b"bye")
    hunk = by_path(diff(overlay))["gone.txt"]["hunks"][0]
    assert hunk["lines"] == ["-bye", "+bye", "\\ No newline at end of file"]
    assert "-bye\n+bye\n\\ No newline at end of file\n" in diff(overlay)["diff"]


def test_mode_change_alone(root, overlay):
    overlay.write_bytes("tool.sh", b"echo\n", mode=0o755)
    result = diff(overlay)
    [file] = result["files"]
    assert (file["status"], file["old_mode"], file["new_mode"], file["hunks"]) == ("modified", 0o644, 0o755, [])
    assert result["diff"] == "diff --git a/tool.sh b/tool.sh\nold mode 100644\nnew mode 100755\n"
    os.chmod(root / "tool.sh", 0o755)
    assert diff(overlay)["files"] == []


def test_against_pre_images_after_the_disk_changed(root, overlay):
    overlay.write_bytes("gone.txt", b"hello\n")
    (root / "gone.txt").write_bytes(b"hello\n")  # as if applied
    assert diff(overlay)["files"] == []
    [file] = diff(overlay, against={"gone.txt": b"bye\n"}, against_modes={"gone.txt": 0o600})["files"]
    assert (file["status"], file["old_mode"], file["hunks"][0]["lines"]) == ("modified", 0o600, ["-bye", "+hello"])
    [added] = diff(overlay, against={"gone.txt": None})["files"]
    assert added["status"] == "added"


def test_entries_can_be_passed_instead_of_the_overlay(overlay):
    overlay.write_bytes("new.txt", b"x\n")
    assert diff_overlay(overlay.entries(), overlay.root, overlay.blobs) == diff(overlay)
