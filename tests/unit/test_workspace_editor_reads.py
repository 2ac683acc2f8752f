"""A plan's workspace read through the caller's editor (unsaved buffers): the overlay
reads text files through it, writes are made against what it read, and the journal
checks and keeps the editor's text. Real directories, a real blob store and journal."""

import pytest

from cleveragents.domain.errors import PlanError
from cleveragents.infra.workspace.overlay import MAX_EDITOR_READS
from cleveragents.infra.workspace.plan_workspace import PlanWorkspace


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_bytes(b"on disk\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "image.bin").write_bytes(b"\x00\x01binary")
    return PlanWorkspace(root, tmp_path / "state")


class Editor:
    """Buffers by workspace-relative path; records what it was asked."""

    def __init__(self, buffers):
        self.buffers = buffers
        self.asked = []

    def __call__(self, relative):
        self.asked.append(relative)
        return self.buffers.get(relative)


def test_reads_take_the_buffer_and_ask_each_file_once(workspace):
    editor = Editor({"notes.txt": b"in the buffer\n"})
    overlay = workspace.overlay(None, editor)
    assert overlay.read_bytes("notes.txt") == b"in the buffer\n"
    assert overlay.read_bytes("notes.txt") == b"in the buffer\n"
    assert editor.asked == ["notes.txt"]


def test_binary_files_and_buffers_that_only_change_line_endings_read_the_disk(workspace):
    editor = Editor({"crlf.txt": b"one\ntwo\n", "image.bin": b"text?"})
    overlay = workspace.overlay(None, editor)
    assert overlay.read_bytes("crlf.txt") == b"one\r\ntwo\r\n"
    assert overlay.read_bytes("image.bin") == b"\x00\x01binary"
    assert editor.asked == ["crlf.txt"]  # a binary file is never asked for


def test_the_editor_is_asked_for_a_bounded_number_of_files(workspace):
    root = workspace.overlay().root
    for n in range(MAX_EDITOR_READS + 5):
        (root / f"f{n}.txt").write_bytes(b"x\n")
    editor = Editor({})
    overlay = workspace.overlay(None, editor)
    for n in range(MAX_EDITOR_READS + 5):
        overlay.read_bytes(f"f{n}.txt")
    assert len(editor.asked) == MAX_EDITOR_READS


def test_an_apply_checks_against_the_buffer_read_and_keeps_it_for_rollback(workspace):
    overlay = workspace.overlay(None, Editor({"notes.txt": b"in the buffer\n"}))
    overlay.write_bytes("notes.txt", overlay.read_bytes("notes.txt").replace(b"buffer", b"plan"))
    records = overlay.to_records()
    # The disk was not what the plan read: an apply against the disk is a conflict ...
    with pytest.raises(PlanError) as refused:
        workspace.apply("plan-disk", workspace.overlay(records), force=False)
    assert refused.value.data["conflicts"] == ["notes.txt"]
    # ... and against a buffer changed since, too.
    with pytest.raises(PlanError):
        workspace.apply("plan-changed", workspace.overlay(records), False, {"notes.txt": b"typed since\n"})
    checkpoint = workspace.apply("plan-1", workspace.overlay(records), False, {"notes.txt": b"in the buffer\n"})
    notes = workspace.overlay().root / "notes.txt"
    assert notes.read_bytes() == b"in the plan\n"
    workspace.rollback(checkpoint, force=False)
    assert notes.read_bytes() == b"in the buffer\n"  # the text the plan found


def test_the_diff_is_against_the_buffer(workspace):
    overlay = workspace.overlay(None, Editor({"notes.txt": b"in the buffer\n"}))
    overlay.write_bytes("notes.txt", b"in the plan\n")
    diff = workspace.diff(workspace.overlay(overlay.to_records()), None, {"notes.txt": b"in the buffer\n"})
    assert "-in the buffer" in diff["diff"] and "+in the plan" in diff["diff"]
    assert "on disk" not in diff["diff"]
