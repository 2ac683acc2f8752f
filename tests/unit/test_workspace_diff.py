"""The overlay's diff against the workspace (infra.workspace.diff)."""

import os
import random
import shutil
import subprocess
import threading

import pytest

from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.diff import (
    MAX_DIFF_BYTES,
    MAX_FILE_DIFF_BYTES,
    MAX_FILE_DIFF_LINES,
    MAX_INPUT_BYTES,
    diff_overlay,
)
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
        "additions": 2, "deletions": 0, "truncated": False, "rewritten": False, "hunks": None}
    assert files["new.txt"]["hunks"] == [{"old_start": 0, "old_lines": 0, "new_start": 1, "new_lines": 2,
                                          "header": "@@ -0,0 +1,2 @@", "lines": ["+one", "+two"]}]
    assert files["gone.txt"]["status"] == "deleted" and files["gone.txt"]["new_mode"] is None
    assert files["gone.txt"]["hunks"][0]["header"] == "@@ -1 +0,0 @@"
    modified = files["mod.txt"]
    assert modified["status"] == "modified" and (modified["additions"], modified["deletions"]) == (2, 2)
    assert [h["header"] for h in modified["hunks"]] == ["@@ -1,5 +1,5 @@", "@@ -13,7 +13,7 @@"]
    assert modified["hunks"][0]["lines"] == [" line 1", "-line 2", "+LINE 2", " line 3", " line 4", " line 5"]
    assert result["stats"] == {"files": 3, "additions": 4, "deletions": 3, "truncated_files": 0}
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
    assert diff(overlay) == {"diff": "", "files": [],
                             "stats": {"files": 0, "additions": 0, "deletions": 0, "truncated_files": 0}}


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


# --- speed, caps and odd files --------------------------------------------------------

def patched(old: bytes, file) -> bytes:
    """``old`` with the file's hunks applied, line by line, as a patch tool would."""
    lines = old.decode().splitlines(keepends=True)
    out, cursor = [], 0
    for hunk in file["hunks"]:
        start = hunk["old_start"] - (1 if hunk["old_lines"] else 0)
        out += lines[cursor:start]
        cursor = start
        for line in hunk["lines"]:
            if line == "\\ No newline at end of file":
                out[-1] = out[-1].removesuffix("\n")
            elif line[0] in " -":
                assert lines[cursor].removesuffix("\n") == line[1:], (cursor, line)
                cursor += 1
                if line[0] == " ":
                    out.append(line[1:] + "\n")
            else:
                out.append(line[1:] + "\n")
    return "".join(out + lines[cursor:]).encode()


# These inputs took a quadratic matcher from 20 s to over a minute. The line matcher
# works within a budget that grows with the file's size (linediff.py), so they can't be
# slow; the speed itself is benchmark material, here only the results are checked.
def file_diff(root, overlay, path, old: bytes, new: bytes):
    (root / path).write_bytes(old)
    overlay.write_bytes(path, new)
    [file] = [f for f in diff(overlay)["files"] if f["path"] == path]
    return file


def test_a_long_file_of_repeated_blocks_diffs_exactly(root, overlay):
    old = "".join(f"if (x{i}) {{\n    foo({i});\n}}\n\n" for i in range(500)).encode()
    new = old.replace(b"foo", b"bar")
    file = file_diff(root, overlay, "loop.c", old, new)
    assert (file["additions"], file["deletions"], file["rewritten"]) == (500, 500, False)
    assert patched(old, file) == new


def test_alternating_lines_diff_exactly(root, overlay):
    old, new = b"a\nb\n" * 1000, b"a\nc\n" * 1000
    file = file_diff(root, overlay, "ab.txt", old, new)
    assert (file["additions"], file["deletions"], file["rewritten"]) == (1000, 1000, False)
    assert patched(old, file) == new


def tangle(seed: int) -> bytes:
    """4,000 lines drawn from four: every line repeats, none can anchor a match."""
    pick = random.Random(seed).choice
    return b"".join(pick([b"a\n", b"b\n", b"c\n", b"d\n"]) for _ in range(4000))


def test_a_tangle_too_costly_to_match_is_shown_replaced_and_marked(root, overlay):
    old, new = tangle(1), tangle(2)
    file = file_diff(root, overlay, "tangle.txt", old, new)
    assert file["rewritten"] is True and not file["truncated"]
    assert patched(old, file) == new


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_rewritten_file_is_still_a_patch_git_applies(root, overlay, tmp_path):
    new = b"head\n" + tangle(2) + b"tail"
    (root / "ab.txt").write_bytes(b"head\n" + tangle(1))
    overlay.write_bytes("ab.txt", new)
    patch = tmp_path / "p.diff"
    patch.write_text(diff(overlay)["diff"])
    assert by_path(diff(overlay))["ab.txt"]["rewritten"]
    subprocess.run(["git", "apply", str(patch)], cwd=root, check=True, capture_output=True)
    assert (root / "ab.txt").read_bytes() == new


def test_a_file_over_the_per_file_caps_is_listed_but_not_shown(overlay):
    overlay.write_bytes("many.txt", b"x\n" * (MAX_FILE_DIFF_LINES + 1))
    overlay.write_bytes("wide.txt", b"y" * (MAX_FILE_DIFF_BYTES + 1) + b"\n")
    overlay.write_bytes("small.txt", b"z\n")
    result = diff(overlay)
    files = by_path(result)
    for path, additions in (("many.txt", MAX_FILE_DIFF_LINES + 1), ("wide.txt", 1)):
        assert files[path]["truncated"] and files[path]["hunks"] == []
        assert (files[path]["status"], files[path]["additions"]) == ("added", additions)
        assert f"b/{path}" not in result["diff"]
    assert not files["small.txt"]["truncated"] and "+z\n" in result["diff"]
    assert result["stats"] == {"files": 3, "additions": MAX_FILE_DIFF_LINES + 3, "deletions": 0,
                               "truncated_files": 2}


def test_the_diff_text_has_a_total_cap_and_later_files_are_truncated(overlay):
    line = b"q" * 1000 + b"\n"
    per_file = MAX_FILE_DIFF_BYTES // len(line) - 10  # each file just under its own cap
    count = MAX_DIFF_BYTES // (per_file * len(line)) + 2
    for index in range(count):
        overlay.write_bytes(f"f{index:02}.txt", line * per_file)
    result = diff(overlay)
    shown = [f["path"] for f in result["files"] if not f["truncated"]]
    assert 0 < len(shown) < count and shown == [f"f{i:02}.txt" for i in range(len(shown))]
    assert len(result["diff"].encode()) <= MAX_DIFF_BYTES
    assert result["stats"]["truncated_files"] == count - len(shown)
    assert result["stats"]["additions"] == count * per_file  # truncated files still counted


def test_an_oversized_file_on_disk_is_listed_without_being_read(root, overlay):
    with open(root / "huge.log", "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: costs no disk
    overlay.write_bytes("huge.log", b"short now\n")
    [file] = diff(overlay)["files"]
    assert (file["path"], file["status"], file["truncated"], file["hunks"]) == ("huge.log", "modified", True, [])


def test_a_fifo_in_a_written_files_place_does_not_hang_the_diff(root, overlay):
    overlay.write_bytes("pipe", b"data\n")
    os.mkfifo(root / "pipe")
    result = finishes(lambda: diff(overlay))
    assert by_path(result)["pipe"]["status"] == "added"


def finishes(call, seconds: float = 5.0):
    """``call()``'s result; fails (instead of hanging the suite) when it blocks."""
    box = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked"
    return box[0]
