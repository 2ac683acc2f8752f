"""Journaled apply, rollback and crash recovery (infra.workspace.journal)."""

import json
import os
import stat

import pytest

from cleveragents.domain.errors import AuthorizationError, PlanError, ValidationError
from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.plan_files import OverlayRecord
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.checkpoint import Checkpoint, pre_images
from cleveragents.infra.workspace.diff import diff_overlay
from cleveragents.infra.workspace.journal import Applier
from cleveragents.infra.workspace.overlay import Overlay


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_bytes(b"a = 1\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o750)
    (root / "old.txt").write_bytes(b"old\n")
    os.chmod(root / "old.txt", 0o600)
    (root / "same.txt").write_bytes(b"same\n")
    return root


@pytest.fixture
def blobs(tmp_path):
    return BlobStore(tmp_path / "state" / "blobs")


@pytest.fixture
def applier(root, blobs, tmp_path):
    return Applier(root, blobs, tmp_path / "state" / "journal")


@pytest.fixture
def overlay(root, blobs):
    overlay = Overlay(root, blobs)
    overlay.write_bytes("src/a.py", b"a = 2\n")
    overlay.write_bytes("run.sh", b"#!/bin/sh\necho hi\n", mode=0o755)
    overlay.write_bytes("new/deep/c.py", b"c\n")
    overlay.delete("old.txt")
    overlay.write_bytes("same.txt", b"same\n")
    return overlay


def snapshot(root):
    """Every file's bytes and mode, and every directory."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), oct(p.stat().st_mode)) if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def journal(applier, plan_id):
    return json.loads((applier.journal_dir / f"{plan_id}.json").read_bytes())


def test_apply_writes_exactly_the_overlay(root, applier, overlay):
    checkpoint = applier.apply("p1", overlay.entries())
    assert (root / "src" / "a.py").read_bytes() == b"a = 2\n"
    assert (root / "run.sh").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert oct((root / "run.sh").stat().st_mode & 0o777) == oct(0o755)
    assert (root / "new" / "deep" / "c.py").read_bytes() == b"c\n"
    assert oct((root / "new" / "deep" / "c.py").stat().st_mode & 0o777) == oct(0o644)
    assert not (root / "old.txt").exists()
    assert checkpoint.paths == ["new/deep/c.py", "old.txt", "run.sh", "src/a.py"]  # same.txt: no change
    assert checkpoint.created_dirs == ("new", "new/deep")
    assert journal(applier, "p1")["status"] == "done"
    assert Checkpoint.from_dict(json.loads(json.dumps(checkpoint.to_dict()))) == checkpoint
    assert not [p for p in root.rglob("*") if "cleveragents-tmp" in p.name]


def test_diff_after_apply_against_the_pre_images(root, applier, overlay, blobs):
    before = diff_overlay(overlay, root, blobs)
    checkpoint = applier.apply("p1", overlay.entries())
    assert diff_overlay(overlay, root, blobs)["files"] == []
    after = diff_overlay(overlay, root, blobs, against=pre_images(checkpoint, blobs),
                         against_modes=checkpoint.pre_modes())
    assert after == before


def test_conflicts_refuse_and_write_nothing_unless_forced(root, applier, overlay):
    (root / "src" / "a.py").write_bytes(b"a = 99\n")
    (root / "old.txt").unlink()
    assert applier.conflicts(overlay.entries()) == ["old.txt", "src/a.py"]
    before = snapshot(root)
    with pytest.raises(PlanError) as refused:
        applier.apply("p1", overlay.entries())
    assert refused.value.data == {"plan_id": "p1", "conflicts": ["old.txt", "src/a.py"], "conflict_details": [
        {"path": "old.txt", "changed": ["content"]}, {"path": "src/a.py", "changed": ["content"]}]}
    assert snapshot(root) == before
    assert not (applier.journal_dir / "p1.json").exists()
    checkpoint = applier.apply("p1", overlay.entries(), force=True)
    assert (root / "src" / "a.py").read_bytes() == b"a = 2\n"
    applier.rollback(checkpoint)
    assert (root / "src" / "a.py").read_bytes() == b"a = 99\n"  # the pre-image is what was there at apply


def test_rollback_restores_bytes_and_modes_and_removes_what_apply_created(root, applier, overlay):
    before = snapshot(root)
    checkpoint = applier.apply("p1", overlay.entries())
    applier.discard("p1")
    assert applier.rollback(checkpoint) == checkpoint.paths
    assert snapshot(root) == before
    assert journal(applier, "p1")["op"] == "rollback"


def test_rollback_refuses_files_changed_since_the_apply(root, applier, overlay):
    checkpoint = applier.apply("p1", overlay.entries())
    (root / "run.sh").write_bytes(b"edited by hand\n")
    (root / "old.txt").write_bytes(b"recreated\n")
    with pytest.raises(PlanError) as refused:
        applier.rollback(checkpoint)
    assert refused.value.data["conflicts"] == ["old.txt", "run.sh"]
    assert (root / "src" / "a.py").read_bytes() == b"a = 2\n"
    applier.rollback(checkpoint, force=True)
    assert (root / "run.sh").read_bytes() == b"#!/bin/sh\n" and (root / "old.txt").read_bytes() == b"old\n"


def test_rollback_keeps_a_created_directory_that_has_new_files(root, applier, overlay):
    checkpoint = applier.apply("p1", overlay.entries())
    (root / "new" / "mine.txt").write_bytes(b"user file\n")
    applier.rollback(checkpoint)
    assert (root / "new" / "mine.txt").read_bytes() == b"user file\n"
    assert not (root / "new" / "deep").exists()


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_a_mode_changed_since_execute_is_a_conflict(root, blobs, applier):
    overlay = Overlay(root, blobs)
    overlay.write_bytes("src/a.py", b"a = 2\n")
    overlay.write_bytes("old.txt", b"new\n")
    base = mode(root / "src" / "a.py")
    os.chmod(root / "src" / "a.py", 0o755)
    (root / "old.txt").write_bytes(b"edited\n")
    os.chmod(root / "old.txt", 0o640)
    assert applier.conflicts(overlay.entries()) == ["old.txt", "src/a.py"]
    before = snapshot(root)
    with pytest.raises(PlanError) as refused:
        applier.apply("p1", overlay.entries())
    assert refused.value.data["conflict_details"] == [
        {"path": "old.txt", "changed": ["content", "mode"], "expected_mode": "0600", "found_mode": "0640"},
        {"path": "src/a.py", "changed": ["mode"], "expected_mode": f"{base:04o}", "found_mode": "0755"},
    ]
    assert snapshot(root) == before
    # force writes the plan's content; the plan left the modes alone, so the files keep the new ones.
    checkpoint = applier.apply("p1", overlay.entries(), force=True)
    assert (root / "src" / "a.py").read_bytes() == b"a = 2\n" and mode(root / "src" / "a.py") == 0o755
    assert mode(root / "old.txt") == 0o640
    applier.discard("p1")
    applier.rollback(checkpoint)
    assert snapshot(root) == before


def test_a_forced_apply_writes_a_mode_the_plan_chose(root, blobs, applier):
    overlay = Overlay(root, blobs)
    overlay.write_bytes("run.sh", b"#!/bin/sh\necho hi\n", mode=0o755)  # was 0o750
    os.chmod(root / "run.sh", 0o700)
    with pytest.raises(PlanError):
        applier.apply("p1", overlay.entries())
    applier.apply("p1", overlay.entries(), force=True)
    assert mode(root / "run.sh") == 0o755


def test_rollback_refuses_a_mode_changed_since_the_apply(root, applier, overlay):
    before = snapshot(root)
    checkpoint = applier.apply("p1", overlay.entries())
    applier.discard("p1")
    os.chmod(root / "new" / "deep" / "c.py", 0o600)
    with pytest.raises(PlanError) as refused:
        applier.rollback(checkpoint)
    assert refused.value.data["conflict_details"] == [
        {"path": "new/deep/c.py", "changed": ["mode"], "expected_mode": "0644", "found_mode": "0600"}]
    assert (root / "src" / "a.py").read_bytes() == b"a = 2\n"
    applier.rollback(checkpoint, force=True)
    assert snapshot(root) == before


def test_records_stored_without_a_base_mode_check_content_only(root, blobs, applier):
    overlay = Overlay(root, blobs)
    overlay.write_bytes("src/a.py", b"a = 2\n")
    old_records = [OverlayRecord.from_dict({k: v for k, v in record.to_dict().items() if k != "base_mode"})
                   for record in overlay.to_records()]
    rebuilt = Overlay.from_records(root, blobs, None, old_records)
    assert [entry.base_mode for entry in rebuilt.entries()] == [None]
    os.chmod(root / "src" / "a.py", 0o600)
    assert applier.conflicts(rebuilt.entries()) == []
    applier.apply("p1", rebuilt.entries())
    assert (root / "src" / "a.py").read_bytes() == b"a = 2\n"


def test_a_deleted_file_makes_way_for_a_directory_and_back(root, blobs, applier):
    overlay = Overlay(root, blobs)
    overlay.delete("old.txt")
    overlay.write_bytes("old.txt/inside.txt", b"now a directory\n")
    before = snapshot(root)
    checkpoint = applier.apply("p1", overlay.entries())
    assert checkpoint.created_dirs == ("old.txt",)
    assert (root / "old.txt" / "inside.txt").read_bytes() == b"now a directory\n"
    applier.discard("p1")
    applier.rollback(checkpoint)
    assert snapshot(root) == before


def test_a_failed_apply_is_undone(root, blobs, applier):
    overlay = Overlay(root, blobs)
    overlay.write_bytes("src/a.py", b"a = 2\n")
    overlay.write_bytes("zz/file.txt", b"z\n")
    (root / "zz").write_bytes(b"a file where apply needs a directory\n")  # appeared after execute
    before = snapshot(root)
    with pytest.raises(PlanError) as failed:
        applier.apply("p1", overlay.entries(), force=True)
    assert failed.value.data["path"] == "zz/file.txt" and failed.value.data["op"] == "apply"
    assert snapshot(root) == before
    assert journal(applier, "p1") | {"checkpoint": None} == {
        "op": "apply", "status": "done", "outcome": "undone", "checkpoint": None}


def test_paths_through_escaping_symlinks_are_refused(tmp_path, root, blobs, applier):
    overlay = Overlay(root, blobs)
    overlay.write_bytes("link/x.txt", b"x\n")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link")  # swapped in after execute
    with pytest.raises(AuthorizationError) as refused:
        applier.apply("p1", overlay.entries(), force=True)
    assert refused.value.data == {"path": "link/x.txt", "reason": "symlink_escape"}
    assert list((tmp_path / "outside").iterdir()) == []


def crash_midway(root, applier, overlay, plan_id="p1"):
    """A real apply, then the state a kill half-way through would leave: journal
    "started", the first half of the files new, the rest old, a temp file lying around."""
    before = snapshot(root)
    checkpoint = applier.apply(plan_id, overlay.entries())
    record = journal(applier, plan_id)
    del record["outcome"]
    (applier.journal_dir / f"{plan_id}.json").write_text(json.dumps(record | {"status": "started"}))
    for entry in checkpoint.entries[len(checkpoint.entries) // 2:]:
        target = root / entry.path
        if entry.existed:
            target.write_bytes(applier.blobs.get(entry.pre_blob))
            os.chmod(target, entry.pre_mode)
        else:
            target.unlink(missing_ok=True)
    (root / "src" / ".a.py.cleveragents-tmp-0123abcd").write_bytes(b"half")
    return before, checkpoint


def test_recover_rolls_forward_when_the_new_contents_are_there(root, blobs, applier, overlay, tmp_path):
    crash_midway(root, applier, overlay)
    expected_after = {e.path: blobs.get(e.blob) for e in overlay.entries() if e.blob}
    restarted = Applier(root, BlobStore(blobs.root), applier.journal_dir)
    [report] = restarted.recover()
    assert (report.plan_id, report.op, report.outcome) == ("p1", "apply", "completed")
    assert report.paths == ["new/deep/c.py", "old.txt", "run.sh", "src/a.py"]
    assert {path: (root / path).read_bytes() for path in expected_after} == expected_after
    assert oct((root / "run.sh").stat().st_mode & 0o777) == oct(0o755)
    assert not (root / "old.txt").exists()
    assert not [p for p in root.rglob("*") if "cleveragents-tmp" in p.name]
    assert journal(restarted, "p1")["status"] == "done"
    assert [r.outcome for r in restarted.recover()] == ["completed"]  # idempotent
    restarted.discard("p1")
    assert restarted.recover() == []


def test_recover_undoes_when_a_new_content_is_missing(root, blobs, applier, overlay):
    before, checkpoint = crash_midway(root, applier, overlay)
    blobs.path(overlay.entries()[0].blob).unlink()  # new/deep/c.py's content
    restarted = Applier(root, BlobStore(blobs.root), applier.journal_dir)
    [report] = restarted.recover()
    assert (report.op, report.outcome, report.checkpoint) == ("apply", "undone", checkpoint)
    assert snapshot(root) == before
    assert [r.outcome for r in Applier(root, BlobStore(blobs.root), applier.journal_dir).recover()] == ["undone"]


def test_an_unrecovered_plan_refuses_new_operations(root, applier, overlay):
    _, checkpoint = crash_midway(root, applier, overlay)
    with pytest.raises(PlanError) as refused:
        applier.rollback(checkpoint)
    assert refused.value.data == {"plan_id": "p1", "op": "apply"}
    applier.recover()
    applier.rollback(checkpoint)


def test_recover_finishes_an_interrupted_rollback(root, blobs, applier, overlay):
    before = snapshot(root)
    checkpoint = applier.apply("p1", overlay.entries())
    applier.rollback(checkpoint)
    record = journal(applier, "p1") | {"status": "started"}
    (applier.journal_dir / "p1.json").write_text(json.dumps(record))
    (root / "src" / "a.py").write_bytes(b"a = 2\n")  # this file was not restored yet
    [report] = Applier(root, BlobStore(blobs.root), applier.journal_dir).recover()
    assert (report.op, report.outcome) == ("rollback", "completed")
    assert snapshot(root) == before


def test_recover_with_nothing_to_do_cleans_stray_temp_files(tmp_path, root, blobs, applier):
    assert applier.recover() == []
    blobs.put(b"x")
    stray = blobs.root / "ab" / ".cdef.cleveragents-tmp-1234"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"half a blob")
    applier.journal_dir.mkdir(parents=True)
    (applier.journal_dir / "broken.json").write_text("{not json")
    assert applier.recover() == []
    assert not stray.exists() and (applier.journal_dir / "broken.json").exists()


def test_durable_mode_applies_and_rolls_back_the_same(root, blobs, overlay, tmp_path):
    before = snapshot(root)
    durable = Applier(root, blobs, tmp_path / "state" / "journal", durable=True)
    checkpoint = durable.apply("p-durable", overlay.entries())
    assert (root / "new" / "deep" / "c.py").read_bytes() == b"c\n"
    durable.rollback(checkpoint)
    assert snapshot(root) == before


# --- a journal is untrusted input -------------------------------------------------------

def forge_journal(applier, blobs, entries, plan_id="p-forged", created_dirs=()):
    """A journal as a plan that wrote into the state directory could leave it: an
    apply "started", whose new contents are in the blob store."""
    records = []
    for path, content in entries:
        records.append({"path": path, "existed": False, "pre_blob": None, "pre_mode": None,
                        "post_blob": blobs.put(content), "post_mode": 0o755})
    checkpoint = {"plan_id": plan_id, "created_at": "2020-01-01T00:00:00Z", "entries": records,
                  "created_dirs": list(created_dirs)}
    applier.journal_dir.mkdir(parents=True, exist_ok=True)
    (applier.journal_dir / f"{plan_id}.json").write_text(
        json.dumps({"op": "apply", "status": "started", "checkpoint": checkpoint}))


@pytest.mark.parametrize(("path", "reason"), [
    (".git/hooks/pre-commit", "protected"),
    ("deploy/.env", "protected_path"),
    ("../outside.sh", "outside_workspace"),
    ("a/../b.txt", "not_normalized"),
])
def test_recovery_refuses_a_journal_naming_a_guarded_path(root, blobs, applier, path, reason, caplog):
    (root / ".git").mkdir()
    before = snapshot(root)
    forge_journal(applier, blobs, [("aaa-first.txt", b"harmless\n"), (path, b"#!/bin/sh\necho pwned\n")])
    [report] = applier.recover()
    assert (report.plan_id, report.outcome) == ("p-forged", "failed")
    assert report.error == {"reason": reason, "path": path}
    assert snapshot(root) == before  # not even the harmless file: nothing is half done
    assert not (root.parent / "outside.sh").exists()
    assert journal(applier, "p-forged")["status"] == "started"  # left for a person to look at
    assert "p-forged" in caplog.text


def test_recovery_refuses_paths_through_symlinks_into_guarded_places(tmp_path, root, blobs, applier):
    (root / ".git" / "hooks").mkdir(parents=True)
    os.symlink(root / ".git", root / "docs")  # inside the root, but it leads into .git
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "out")
    forge_journal(applier, blobs, [("docs/hooks/pre-commit", b"x\n")], plan_id="p-in")
    forge_journal(applier, blobs, [("out/x.sh", b"x\n")], plan_id="p-out")
    reports = {report.plan_id: report for report in applier.recover()}
    assert reports["p-in"].outcome == reports["p-out"].outcome == "failed"
    # No link is followed, whether it leads out or into a guarded place.
    assert reports["p-in"].error == {"reason": "symlink_escape", "path": "docs/hooks/pre-commit"}
    assert reports["p-out"].error == {"reason": "symlink_escape", "path": "out/x.sh"}
    assert list((root / ".git" / "hooks").iterdir()) == [] and list((tmp_path / "elsewhere").iterdir()) == []


def test_recovery_refuses_created_dirs_outside_the_workspace(tmp_path, root, blobs, applier):
    forge_journal(applier, blobs, [("x.txt", b"x\n")], created_dirs=["../sibling"])
    (tmp_path / "sibling").mkdir()
    [report] = applier.recover()
    assert report.outcome == "failed" and report.error == {"reason": "outside_workspace", "path": "../sibling"}
    assert (tmp_path / "sibling").is_dir() and not (root / "x.txt").exists()


def test_recovery_leaves_out_an_absolute_path_and_obeys_the_applier_policy(tmp_path, root, blobs):
    applier = Applier(root, blobs, tmp_path / "state" / "journal", policy=GuardPolicy(protected=("state",)))
    forge_journal(applier, blobs, [("/etc/cron.d/x", b"x\n")], plan_id="p-abs")
    forge_journal(applier, blobs, [("state/db", b"x\n")], plan_id="p-state")
    reports = {report.plan_id: report for report in applier.recover()}
    assert reports["p-abs"].error == {"reason": "absolute_path"}
    assert reports["p-state"].error == {"reason": "protected", "path": "state/db"}
    assert not (root / "state").exists()


def test_a_journal_whose_plan_id_is_not_its_name_is_not_applied(root, blobs, applier):
    forge_journal(applier, blobs, [("x.txt", b"x\n")], plan_id="p1")
    (applier.journal_dir / "p1.json").rename(applier.journal_dir / "other.json")
    assert applier.recover() == []
    assert not (root / "x.txt").exists() and (applier.journal_dir / "other.json").exists()


def test_rollback_refuses_a_checkpoint_naming_a_guarded_path(root, blobs, applier):
    (root / ".git").mkdir()
    digest = blobs.put(b"#!/bin/sh\n")
    checkpoint = Checkpoint.from_dict({"plan_id": "p1", "created_at": "t", "entries": [
        {"path": ".git/hooks/post-checkout", "existed": True, "pre_blob": digest, "pre_mode": 0o755,
         "post_blob": None, "post_mode": None}]})
    with pytest.raises(AuthorizationError) as refused:
        applier.rollback(checkpoint, force=True)
    assert refused.value.data["reason"] == "protected"
    assert not (root / ".git" / "hooks").exists() and not applier.journal_dir.exists()


@pytest.mark.parametrize("change", [
    {"post_mode": 0o100755}, {"post_mode": True}, {"post_blob": "../../etc/passwd"}, {"existed": "yes"},
    {"path": 7}, {"unknown": 1},
])
def test_a_malformed_checkpoint_entry_is_refused_by_index(change):
    good = {"path": "a.txt", "existed": False, "pre_blob": None, "pre_mode": None,
            "post_blob": "0" * 64, "post_mode": 0o644}
    assert Checkpoint.from_dict({"plan_id": "p", "created_at": "t", "entries": [good]}).entries[0].post_mode == 0o644
    with pytest.raises(ValidationError) as refused:
        Checkpoint.from_dict({"plan_id": "p", "created_at": "t", "entries": [good, good | change]})
    assert refused.value.data == {"field": "checkpoint.entries", "index": 1}
