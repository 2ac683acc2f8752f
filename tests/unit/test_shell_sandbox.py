"""What a sandboxed command's changes become: each kind of change a command can make to
its overlay, run for real (``shell.run`` in the sandbox, on a real workspace), and read
back as the plan's changes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cleveragents.domain.errors import AuthorizationError
from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.tools import ToolContext
from cleveragents.infra.sandbox.protected_scan import ProtectedScan
from cleveragents.infra.tools.shell import ShellRunTool
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.overlay import Overlay

POLICY = GuardPolicy().with_overrides(protected_paths=(*GuardPolicy().protected_paths, "/.cleveragents/"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("a\n")
    (root / "src" / "pkg" / "b.py").write_text("b\n")
    (root / "README.md").write_text("hello\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / ".cleveragents").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def view(ws: Path) -> Overlay:
    return Overlay(ws, BlobStore(ws.parent / "blobs"), POLICY)


def sh(view: Overlay, ws: Path, script: str) -> dict:
    context = ToolContext(view=view, workspace=str(ws), settings={"shell_allow": ["sh -c"]})
    result = ShellRunTool().run({"command": ["sh", "-c", script], "timeout": 30}, context)
    assert result.output["exit_code"] == 0, result.artifacts[0].data
    return result.output["changes"]


def test_written_and_deleted_files_become_the_plans_changes(view, ws):
    changes = sh(view, ws, "echo new > new.txt && rm README.md && echo more >> src/pkg/a.py")
    assert sorted(changes["written"]) == ["new.txt", "src/pkg/a.py"] and changes["deleted"] == ["README.md"]
    assert view.read_bytes("new.txt") == b"new\n" and view.read_bytes("src/pkg/a.py") == b"a\nmore\n"
    assert not view.exists("README.md")
    assert (ws / "README.md").read_text() == "hello\n" and not (ws / "new.txt").exists()


def test_a_directory_removed_and_made_again_deletes_what_was_below_it(view, ws):
    changes = sh(view, ws, "rm -rf src/pkg && mkdir src/pkg && echo c > src/pkg/c.py")
    assert changes["written"] == ["src/pkg/c.py"]
    assert sorted(changes["deleted"]) == ["src/pkg/a.py", "src/pkg/b.py"]


def test_a_command_sees_the_plans_pending_changes_and_changes_them_further(view, ws):
    view.write_bytes("pending.txt", b"one\n")
    view.delete("README.md")
    changes = sh(view, ws, "test ! -e README.md && cat pending.txt > copy.txt && rm pending.txt")
    assert changes["written"] == ["copy.txt"] and changes["deleted"] == ["pending.txt"]
    assert view.read_bytes("copy.txt") == b"one\n" and not view.exists("pending.txt")


def test_a_mode_change_is_a_change_and_a_file_only_touched_is_none(view, ws):
    changes = sh(view, ws, "chmod 755 src/pkg/a.py && touch src/pkg/b.py")
    assert changes["written"] == ["src/pkg/a.py"] and view.mode("src/pkg/a.py") == 0o755


def test_ignored_paths_and_git_internals_are_reported_not_kept(view, ws):
    changes = sh(view, ws, "echo x > run.log && mkdir build && echo o > build/out.o && git add README.md")
    assert changes["files_changed"] == 0 and view.changed_paths() == []
    assert sorted(changes["ignored"]) == ["build/out.o", "run.log"]
    assert ".git/index" in changes["discarded"]


def test_a_gitignore_of_thousands_of_rules_applies_what_one_set_holds(view, ws, caplog):
    """The rules are matched in linear time, in one re2 set, which holds a few thousand:
    the first rules apply, what the later ones would leave out is kept for review, and
    the log says so. Lines that are no pattern, or too long to be one, are skipped."""
    rules = "".join(f"generated_module_{n}/\n*.ext{n}\n" for n in range(5000))
    (ws / ".gitignore").write_text("!\n\\\n" + "*a" * 100_000 + "\nbuild/\n" + rules + "late/\n")
    changes = sh(view, ws, "mkdir -p build generated_module_7 late && echo o > build/out.o"
                           " && echo g > generated_module_7/g.py && echo e > data.ext7 && echo k > late/kept.txt")
    assert sorted(changes["ignored"]) == ["build/out.o", "data.ext7", "generated_module_7/g.py"]
    assert view.changed_paths() == ["late/kept.txt"]
    assert "are 10005 lines; only the first" in caplog.text, caplog.text


def test_a_command_writing_a_gitignore_of_a_million_rules_gets_its_changes_reviewed(view, ws, caplog):
    """What a command writes to a rule file is held to the same bounds."""
    script = (r"""python3 -c "import sys; sys.stdout.write(''.join(f'rule_{n}/\n' for n in range(1000000)))" """
              r"""> .gitignore && mkdir -p rule_5 rule_999999 && echo x > rule_5/a.txt && echo y > rule_999999/b.txt""")
    context = ToolContext(view=view, workspace=str(ws), settings={"shell_allow": ["sh -c"]})
    result = ShellRunTool().run({"command": ["sh", "-c", script], "timeout": 60}, context)
    assert result.output["exit_code"] == 0, result.artifacts[0].data
    changes = result.output["changes"]
    assert changes["ignored"] == ["rule_5/a.txt"]  # among the first rules
    assert sorted(view.changed_paths()) == [".gitignore", "rule_999999/b.txt"]
    assert "are 1000000 lines; only the first" in caplog.text, caplog.text


def test_what_a_plan_cannot_hold_is_listed(view, ws):
    changes = sh(view, ws, "ln -s README.md link && mkfifo pipe")
    assert {item["path"]: item["kind"] for item in changes["not_recorded"]} == {"link": "symlink", "pipe": "fifo"}
    assert view.changed_paths() == []


@pytest.mark.parametrize("script", ["echo x > .env", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
                                    "echo x > keys/id_ed25519", "mkdir .cleveragents && echo x > .cleveragents/x"])
def test_a_change_to_a_protected_path_refuses_the_whole_step(view, ws, script):
    (ws / "keys").mkdir()
    context = ToolContext(view=view, workspace=str(ws), settings={"shell_allow": ["sh -c"]})
    with pytest.raises(AuthorizationError) as refused:
        ShellRunTool().run({"command": ["sh", "-c", f"echo kept > kept.txt; {script}"]}, context)
    assert refused.value.data["reason"] == "protected_path"
    assert view.changed_paths() == []  # nothing of the step is kept


def test_protected_paths_are_hidden_from_a_command(view, ws):
    (ws / ".env").write_text("SECRET\n")
    (ws / "deploy").mkdir()
    (ws / "deploy" / "server.pem").write_text("SECRET\n")
    (ws / ".git" / "hooks" / "pre-commit").write_text("SECRET\n")
    context = ToolContext(view=view, workspace=str(ws), settings={"shell_allow": ["sh -c"]})
    result = ShellRunTool().run({"command": ["sh", "-c", "ls -a . deploy .git .cleveragents; cat .env"]}, context)
    log = result.artifacts[0].data.decode()
    assert "SECRET" not in log and "server.pem" not in log and "hooks" not in log
    assert "README.md" in log and "No such file" in log


def test_the_scan_of_protected_paths_follows_the_workspace_as_it_changes(ws):
    scan = ProtectedScan(str(ws), POLICY)
    found = [".cleveragents", ".git/config", ".git/hooks"]  # a directory stands for all below it
    assert scan.hidden() == found
    (ws / "src" / "pkg" / ".env.local").write_text("x")
    assert scan.hidden() == [*found, "src/pkg/.env.local"]
    os.unlink(ws / "src" / "pkg" / ".env.local")
    assert scan.hidden() == found
