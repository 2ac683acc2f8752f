"""The built-in tools, run through a real Overlay over a workspace in tmp_path."""

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cleveragents.domain.errors import (
    AuthorizationError,
    BudgetExceededError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.guards import GuardPolicy
from cleveragents.domain.tools import ToolCancelled, ToolContext
from cleveragents.infra.tools.builtin import builtin_tools
from cleveragents.infra.tools.fs import (
    GlobTool,
    ReadTool,
    ReplaceTool,
    SearchTool,
    WriteTool,
)
from cleveragents.infra.tools.patch import PatchApplyTool
from cleveragents.infra.tools.shell import DEFAULT_ALLOW, GUARD, LOG_LIMIT, ShellRunTool
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.diff import diff_overlay
from cleveragents.infra.workspace.overlay import Overlay


@pytest.fixture
def overlay(workspace: Path, tmp_path: Path) -> Overlay:
    return Overlay(workspace, BlobStore(tmp_path / "blobs"))


@pytest.fixture
def context(overlay: Overlay, workspace: Path) -> ToolContext:
    return ToolContext(view=overlay, workspace=str(workspace))


def run(tool, context: ToolContext, **arguments):
    return tool.run(tool.validate(arguments), context)


def files(root: Path, contents: dict[str, str | bytes]) -> None:
    for name, content in contents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


# --- base ----------------------------------------------------------------------------

def test_the_builtin_tools_have_namespaces_and_clean_schemas():
    tools = {tool.name: tool for tool in builtin_tools()}
    assert sorted(tools) == ["actor.edit", "fs.glob", "fs.read", "fs.replace", "fs.search", "fs.write", "patch.apply",
                             "shell.run"]
    assert tools["patch.apply"].namespace == "patch"
    schema = tools["fs.search"].input_schema()
    assert schema["required"] == ["pattern"] and schema["properties"]["glob"]["default"] == "**/*"
    assert "title" not in json.dumps(schema)


def test_validate_names_the_bad_fields_and_fills_defaults():
    tool = SearchTool()
    assert tool.validate({"pattern": "x"}) == {"pattern": "x", "glob": "**/*", "max_results": 100, "ignore_case": False}
    with pytest.raises(ValidationError) as caught:
        tool.validate({"pattern": "x", "max_results": 0, "globb": "*"})
    assert caught.value.data["tool"] == "fs.search"
    assert {(tuple(e["loc"]), e["type"]) for e in caught.value.data["errors"]} == {
        (("max_results",), "greater_than_equal"), (("globb",), "extra_forbidden")}


# --- fs --------------------------------------------------------------------------------

def test_read_returns_the_text_or_a_range_of_lines(context, workspace):
    files(workspace, {"src/a.py": "one\ntwo\nthree\n"})
    whole = run(ReadTool(), context, path="src/a.py")
    assert whole.output["text"] == "one\ntwo\nthree\n" and whole.output["total_lines"] == 3
    assert whole.reads == ["src/a.py"]
    part = run(ReadTool(), context, path="src/a.py", start_line=2, end_line=3)
    assert (part.output["text"], part.output["start_line"], part.output["end_line"]) == ("two\nthree\n", 2, 3)


def test_read_refuses_binary_missing_and_protected_files(context, workspace):
    files(workspace, {"logo.png": b"\x89PNG\x00\x01", ".git/config": "[core]\n"})
    with pytest.raises(ValidationError) as caught:
        run(ReadTool(), context, path="logo.png")
    assert caught.value.data == {"tool": "fs.read", "path": "logo.png", "reason": "binary"}
    with pytest.raises(ResourceNotFoundError):
        run(ReadTool(), context, path="nope.txt")
    with pytest.raises(AuthorizationError):
        run(ReadTool(), context, path=".git/config")


def test_a_nul_past_the_first_8_kib_is_binary_to_fs_read_and_to_the_plan_diff(context, overlay, workspace):
    files(workspace, {"late.dat": b"a" * 9000 + b"\x00tail\n"})
    with pytest.raises(ValidationError) as caught:
        run(ReadTool(), context, path="late.dat")
    assert caught.value.data["reason"] == "binary"
    overlay.write_bytes("late.dat", b"a" * 9000 + b"\x00other\n")
    [changed] = diff_overlay(overlay, overlay.root, overlay.blobs)["files"]
    assert changed["path"] == "late.dat" and changed["binary"] and changed["hunks"] == []


def test_write_goes_to_the_overlay_and_reads_see_it(context, overlay, workspace):
    result = run(WriteTool(), context, path="README.md", content="changed\n")
    created = run(WriteTool(), context, path="bin/tool.sh", content="#!/bin/sh\n", mode=0o755)
    assert result.output["created"] is False and created.output["created"] is True
    assert result.writes == ["README.md"]
    assert (workspace / "README.md").read_text() == "hello\n" and not (workspace / "bin").exists()
    assert run(ReadTool(), context, path="README.md").output["text"] == "changed\n"
    assert overlay.mode("bin/tool.sh") == 0o755


def test_glob_lists_the_merged_view_without_protected_paths(context, workspace):
    files(workspace, {"src/a.py": "", "src/deep/b.py": "", "src/c.txt": "", ".git/x.py": "", ".env": "X=1"})
    run(WriteTool(), context, path="src/new.py", content="")
    assert run(GlobTool(), context, pattern="**/*.py").output["paths"] == ["src/a.py", "src/deep/b.py", "src/new.py"]
    assert run(GlobTool(), context, pattern="**/*", max_results=2).output["truncated"] is True


def test_search_reports_each_match_and_skips_binary_files(context, workspace):
    files(workspace, {"a.py": "foo = 1\nbar(foo, foo)\n", "b.py": "nothing\n", "c.bin": b"foo\x00foo",
                      "d.txt": "foo\n"})
    result = run(SearchTool(), context, pattern=r"fo+", glob="**/*.py")
    assert result.output["results"] == [
        {"path": "a.py", "line": 1, "column": 1, "text": "foo = 1"},
        {"path": "a.py", "line": 2, "column": 5, "text": "bar(foo, foo)"},
        {"path": "a.py", "line": 2, "column": 10, "text": "bar(foo, foo)"},
    ]
    everywhere = run(SearchTool(), context, pattern="FOO", ignore_case=True, max_results=2)
    assert [r["path"] for r in everywhere.output["results"]] == ["a.py", "a.py"]
    assert everywhere.output["truncated"] is True
    assert "c.bin" not in run(SearchTool(), context, pattern="foo").reads


def test_a_bad_regex_is_a_validation_error_naming_the_pattern():
    with pytest.raises(ValidationError) as caught:
        SearchTool().validate({"pattern": "(unclosed"})
    (error,) = caught.value.data["errors"]
    assert error["loc"] == ["pattern"] and "'(unclosed'" in error["msg"]


def test_replace_writes_only_the_files_that_change(context, overlay, workspace):
    files(workspace, {"src/a.py": "old_name(1)\nold_name(2)\n", "src/b.py": "nothing here\n",
                      "docs/c.md": "old_name\n"})
    result = run(ReplaceTool(), context, pattern=r"old_(\w+)", replacement=r"new_\1", glob="src/**/*.py")
    assert result.output == {"files": [{"path": "src/a.py", "replacements": 2}], "total_replacements": 2,
                             "files_scanned": 2, "skipped": []}
    assert result.reads == ["src/a.py", "src/b.py"] and result.writes == ["src/a.py"]
    assert overlay.changed_paths() == ["src/a.py"]
    assert overlay.read_bytes("src/a.py") == b"new_name(1)\nnew_name(2)\n"
    assert (workspace / "src/a.py").read_text() == "old_name(1)\nold_name(2)\n"


def test_replace_flags_and_count(context, overlay, workspace):
    files(workspace, {"a.txt": "Foo\nfoo\nFOO\n"})
    run(ReplaceTool(), context, pattern="^foo$", replacement="x", glob="a.txt", ignore_case=True,
        multiline=True, count=2)
    assert overlay.read_bytes("a.txt") == b"x\nx\nFOO\n"


def test_replace_refuses_a_bad_replacement_before_running():
    with pytest.raises(ValidationError) as caught:
        ReplaceTool().validate({"pattern": "(a)", "replacement": r"\2"})
    assert caught.value.data["errors"][0]["loc"] == ["replacement"]


def test_a_cancelled_replace_writes_nothing(context, overlay, workspace):
    files(workspace, {"a.txt": "x\n"})
    context.cancelled.set()
    with pytest.raises(ToolCancelled):
        run(ReplaceTool(), context, pattern="x", replacement="y")
    assert overlay.changed_paths() == []


def test_read_refuses_a_fifo_instead_of_blocking(context, workspace):
    os.mkfifo(workspace / "pipe")
    outcome: list = []

    def read():
        try:
            run(ReadTool(), context, path="pipe")
        except ValidationError as exc:
            outcome.append(exc.data)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():
        os.close(os.open(workspace / "pipe", os.O_WRONLY | os.O_NONBLOCK))  # unblocks it
        pytest.fail("fs.read blocked on a FIFO")
    assert outcome == [{"path": "pipe", "reason": "not_a_regular_file"}]


def test_files_over_max_read_bytes_are_refused_by_read_and_skipped_by_search_and_replace(workspace, tmp_path):
    overlay = Overlay(workspace, BlobStore(tmp_path / "blobs"), GuardPolicy(max_read_bytes=20))
    context = ToolContext(view=overlay, workspace=str(workspace))
    files(workspace, {"big.txt": "needle " * 10, "small.txt": "needle\n"})
    with pytest.raises(BudgetExceededError) as refused:
        run(ReadTool(), context, path="big.txt")
    assert refused.value.data["limit"] == "max_read_bytes" and refused.value.data["path"] == "big.txt"
    skipped = [{"path": "big.txt", "reason": "too_large"}]
    search = run(SearchTool(), context, pattern="needle", glob="*.txt")
    assert [r["path"] for r in search.output["results"]] == ["small.txt"]
    assert search.output["skipped"] == skipped and search.reads == ["small.txt"]
    replace = run(ReplaceTool(), context, pattern="needle", replacement="pin", glob="*.txt")
    assert replace.output["skipped"] == skipped and replace.writes == ["small.txt"]
    assert overlay.changed_paths() == ["small.txt"]


# --- patch -----------------------------------------------------------------------------

def test_patch_applies_several_hunks_and_files_in_the_overlay(context, overlay, workspace):
    files(workspace, {"a.txt": "".join(f"line {n}\n" for n in range(1, 21)), "b.txt": "keep\nold\n"})
    patch = (
        "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n"
        "@@ -1,3 +1,3 @@\n-line 1\n+LINE 1\n line 2\n line 3\n"
        "@@ -17,4 +17,5 @@\n line 17\n line 18\n+inserted\n line 19\n line 20\n"
        "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
    )
    result = run(PatchApplyTool(), context, patch=patch)
    assert [f["path"] for f in result.output["files"]] == ["a.txt", "b.txt"]
    text = overlay.read_bytes("a.txt").decode()
    assert text.startswith("LINE 1\nline 2\n") and "line 18\ninserted\nline 19\n" in text
    assert overlay.read_bytes("b.txt") == b"keep\nnew\n"
    assert (workspace / "b.txt").read_text() == "keep\nold\n"


def test_patch_creates_and_deletes_files(context, overlay, workspace):
    files(workspace, {"gone.txt": "bye\nnow\n"})
    patch = (
        "diff --git a/tool.sh b/tool.sh\nnew file mode 100755\n--- /dev/null\n+++ b/tool.sh\n"
        "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n"
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n"
        "@@ -1,2 +0,0 @@\n-bye\n-now\n"
    )
    result = run(PatchApplyTool(), context, patch=patch)
    assert [f["change"] for f in result.output["files"]] == ["created", "deleted"]
    assert overlay.read_bytes("tool.sh") == b"#!/bin/sh\necho hi\n" and overlay.mode("tool.sh") == 0o755
    assert not overlay.exists("gone.txt") and (workspace / "gone.txt").exists()


def test_patch_without_prefixes_and_with_no_newline_at_end(context, overlay, workspace):
    files(workspace, {"src/x.txt": "a\nb"})
    patch = ("--- src/x.txt\t2024-01-01 00:00:00\n+++ src/x.txt\t2024-01-02 00:00:00\n@@ -1,2 +1,3 @@\n a\n-b\n"
             "\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n")
    run(PatchApplyTool(), context, patch=patch)
    assert overlay.read_bytes("src/x.txt") == b"a\nb\nc"


def test_a_hunk_whose_line_numbers_are_off_applies_where_its_context_matches(context, overlay, workspace):
    files(workspace, {"a.txt": "new top\n" * 3 + "x\ny\nz\n"})
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n"
    result = run(PatchApplyTool(), context, patch=patch)
    assert result.output["files"][0]["offsets"] == [3]
    assert overlay.read_bytes("a.txt") == b"new top\n" * 3 + b"x\nY\nz\n"


def test_a_failing_hunk_names_the_file_and_writes_nothing(context, overlay, workspace):
    files(workspace, {"a.txt": "one\n", "b.txt": "two\nthree\n"})
    patch = ("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"
             "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n two\n-four\n+FOUR\n")
    with pytest.raises(ValidationError) as caught:
        run(PatchApplyTool(), context, patch=patch)
    assert caught.value.data == {"tool": "patch.apply", "path": "b.txt", "hunk": 1, "header": "@@ -1,2 +1,2 @@",
                                 "reason": "context_mismatch"}
    assert overlay.changed_paths() == []


def test_patch_refuses_a_new_file_that_exists_and_garbage(context, overlay):
    with pytest.raises(ValidationError) as caught:
        run(PatchApplyTool(), context, patch="--- /dev/null\n+++ b/README.md\n@@ -0,0 +1 @@\n+x\n")
    assert caught.value.data["reason"] == "exists"
    with pytest.raises(ValidationError) as caught:
        run(PatchApplyTool(), context, patch="just some text\n")
    assert caught.value.data["reason"] == "malformed"


def test_a_git_rename_moves_the_file(context, overlay, workspace):
    files(workspace, {"old.txt": "a\nb\n"})
    patch = ("diff --git a/old.txt b/new.txt\nsimilarity index 50%\nrename from old.txt\nrename to new.txt\n"
             "--- a/old.txt\n+++ b/new.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
    run(PatchApplyTool(), context, patch=patch)
    assert not overlay.exists("old.txt") and overlay.read_bytes("new.txt") == b"a\nB\n"


# --- shell -----------------------------------------------------------------------------

@pytest.fixture
def shell_context(context, monkeypatch) -> ToolContext:
    """`python` on PATH is this interpreter, so the child has what the tests need, and
    `python -c` is allowed."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    context.settings = {"shell_allow": [*DEFAULT_ALLOW, "python -c"]}  # the tests' commands are inline code
    return context


def python(code: str) -> list[str]:
    return ["python", "-c", code]


def test_shell_runs_on_the_plans_view_of_the_workspace_and_keeps_a_log(shell_context, workspace):
    run(WriteTool(), shell_context, path="README.md", content="overlay only\n")
    tool = ShellRunTool()
    result = run(tool, shell_context, command="cat README.md")
    assert result.output["exit_code"] == 0 and result.output["timed_out"] is False
    (artifact,) = result.artifacts
    assert artifact.name == result.output["log"] == "shell-1.log"
    assert artifact.data == b"overlay only\n"  # the plan's pending edit, not the disk's file
    assert (workspace / "README.md").read_text() == "hello\n"
    cwd = run(tool, shell_context, command=python("import os, sys; print(os.getcwd()); print(repr(sys.stdin.read()))"))
    assert cwd.artifacts[0].name == "shell-2.log"
    assert cwd.artifacts[0].data.decode().split("\n")[:2] == [os.path.realpath(workspace), "''"]


def test_unconfined_by_configuration_the_shell_runs_on_the_disk(shell_context, workspace):
    run(WriteTool(), shell_context, path="README.md", content="overlay only\n")
    shell_context.settings = {**shell_context.settings, "shell_sandbox": "off"}
    result = run(ShellRunTool(), shell_context, command="cat README.md")
    assert result.artifacts[0].data == b"hello\n" and result.output["sandbox"] == "off"


def test_shell_reports_a_failing_command_without_raising(shell_context):
    result = run(ShellRunTool(), shell_context, command=python("import sys; print('boom', file=sys.stderr); sys.exit(3)"))
    assert result.output["exit_code"] == 3 and result.artifacts[0].data == b"boom\n"


@pytest.mark.parametrize(("command", "refused"), [("rm -rf .", "rm"), ("/bin/sh -c true", "sh"),
                                                  ("sh -c 'echo hi'", "sh"), (["./true"], "true")])
def test_shell_refuses_commands_outside_the_allow_list(shell_context, command, refused):
    with pytest.raises(AuthorizationError) as caught:
        run(ShellRunTool(), shell_context, command=command)
    assert caught.value.data["command"] == refused and "git diff" in caught.value.data["allowed"]


def test_the_allow_list_comes_from_the_settings(shell_context):
    shell_context.settings = {"shell_allow": ["echo"]}
    with pytest.raises(AuthorizationError) as caught:
        run(ShellRunTool(), shell_context, command="python -V")
    assert caught.value.data["allowed"] == ["echo"]
    assert run(ShellRunTool(), shell_context, command=["echo", "a b"]).artifacts[0].data == b"a b\n"


def test_shell_validates_its_arguments():
    for bad in ({"command": ""}, {"command": "echo 'unclosed"}, {"command": []}, {"command": "true", "timeout": 601}):
        with pytest.raises(ValidationError):
            ShellRunTool().validate(bad)


def test_the_child_environment_has_no_secrets(shell_context, monkeypatch):
    monkeypatch.setenv("FOO_TOKEN", "s3cret")
    monkeypatch.setenv("DB_PASSWORD", "s3cret")
    monkeypatch.setenv("FOO_PLAIN", "visible")
    shell_context.settings = {"shell_allow": ["python -c"], "shell_env": ["FOO_TOKEN", "DB_PASSWORD", "FOO_PLAIN"]}
    result = run(ShellRunTool(), shell_context, command=python("import os, json; print(json.dumps(dict(os.environ)))"))
    env = json.loads(result.artifacts[0].data)
    assert "FOO_TOKEN" not in env and "DB_PASSWORD" not in env and env["FOO_PLAIN"] == "visible"
    assert "s3cret" not in result.artifacts[0].data.decode()


def test_a_timeout_kills_the_whole_process_group(shell_context):
    # The grandchild holds the output pipe: only killing the group ends the run early.
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']);"
            "print('started', flush=True); time.sleep(30)")
    result = run(ShellRunTool(), shell_context, command=python(code), timeout=1)
    assert result.output["timed_out"] is True and result.output["exit_code"] != 0
    assert result.output["duration_ms"] < 2500
    assert result.artifacts[0].data == b"started\n"


def test_nothing_a_command_started_outlives_it(shell_context):
    code = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])"
    result = run(ShellRunTool(), shell_context, command=python(code))
    assert result.output["exit_code"] == 0 and result.output["duration_ms"] < 1500


def test_a_command_killed_by_a_signal_reads_as_killed_by_it(shell_context):
    """The guard between the server and the command dies of the command's signal."""
    result = run(ShellRunTool(), shell_context, command=python("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"))
    assert result.output["exit_code"] == -signal.SIGTERM and "exited -15" in result.summary


def test_the_guard_outside_its_own_group_kills_only_the_command():
    """Started by anything but the server (not as its group's leader), a closed stdin
    kills the command alone: the caller's group, this test's, is never signalled."""
    guarded = subprocess.run([sys.executable, "-I", "-S", GUARD, sys.executable, "-c", "import time; time.sleep(30)"],
                             stdin=subprocess.PIPE, timeout=20)  # run() closes stdin at once
    assert guarded.returncode == -signal.SIGKILL


def test_a_missing_program_is_not_installed(shell_context):
    shell_context.settings = {"shell_allow": ["no-such-program-here"]}
    with pytest.raises(ResourceNotFoundError, match="is not installed"):
        run(ShellRunTool(), shell_context, command="no-such-program-here --version")


def test_a_cancel_kills_the_command(shell_context):
    threading.Timer(0.3, shell_context.cancelled.set).start()
    with pytest.raises(ToolCancelled):
        run(ShellRunTool(), shell_context, command=python("import time; time.sleep(30)"))


def test_the_log_keeps_the_last_mebibyte(shell_context):
    code = "import sys; sys.stdout.write('a' * 1048576 + 'b' * 524288)"
    result = run(ShellRunTool(), shell_context, command=python(code))
    data = result.artifacts[0].data
    assert len(data) == LOG_LIMIT and data.endswith(b"b" * 524288) and data.startswith(b"a")
    assert result.output["output_bytes"] == 1048576 + 524288 and result.output["output_truncated"] is True
