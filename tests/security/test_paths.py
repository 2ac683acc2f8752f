"""Path traversal and symlink escapes, on every tool the server registers and on the
plan apply/rollback path.

The tools come from the server's own tool registry (a real Container, with its state
directory inside the workspace under a custom name), so a tool added later without a
case here fails ``test_every_registered_tool_is_attacked``. Every attack must end in
a refusal that names a reason, and nothing outside the workspace may be read (its
text never shows up in a result) or written (its files stay byte for byte).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.actor import TextChunk, ToolCall
from cleveragents.domain.errors import StructuredError
from cleveragents.domain.tools import ToolContext

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"
# Tools that touch no workspace path: attacked elsewhere (tests/security/test_shell.py).
NOT_PATH_TOOLS = {"shell.run"}
REASONS = {"outside_workspace", "absolute_path", "symlink_escape", "protected", "protected_path", "invalid_path"}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def world(tmp_path):
    """A workspace with escape hatches, an outside directory and the real wiring."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "ok.txt").write_text("inside\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "nested" / ".git").mkdir(parents=True)
    (ws / "nested" / ".git" / "HEAD").write_text("ref\n")
    (ws / ".env").write_text("API_KEY=x\n")
    os.symlink(outside / "secret.txt", ws / "link_out")  # a file link out
    os.symlink(outside, ws / "dir_out")  # a directory link out
    os.symlink(ws / ".git", ws / "git_link")  # a link into a protected place
    os.symlink("../../outside/secret.txt", ws / "src" / "rel_out")  # a relative link out
    container = Container(Settings(workspace=ws, state_dir=ws / "state"))
    (ws / "state" / "marker").write_text("state\n")
    before = _snapshot(outside)
    try:
        yield {"ws": ws, "outside": outside, "container": container, "before": before}
    finally:
        container.close()
        assert _snapshot(outside) == before, "a file outside the workspace changed"


ESCAPES = [
    "../outside/secret.txt", "src/../../outside/secret.txt", "..\\outside\\secret.txt", "/etc/passwd",
    "C:/Windows/win.ini", "link_out", "dir_out/secret.txt", "src/rel_out", ".git/config", ".GIT/config",
    "nested/.git/HEAD", "git_link/config", "state/marker", "state/x.db", ".cleveragents/x", ".env",
    "a\x00b", "", ".", "src/..",
]


def _absolute(world: dict[str, Any]) -> list[str]:
    # Absolute forms: one outside, and inside ones that still lead out or into a refused place.
    ws = world["ws"]
    return [str(world["outside"] / "secret.txt"), str(ws / "link_out"), str(ws / "dir_out" / "secret.txt"),
            str(ws / ".git" / "config"), str(ws / "state" / "marker"), str(ws) + "/../outside/secret.txt"]


def _patch(path: str) -> str:
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n"


def _edit_patch(path: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{SECRET}\n+pwned\n"


class _ScriptedActor:
    """An actor that asks for one tool call, as a model would, and keeps the answer."""

    name = "scripted"

    def __init__(self, call: tuple[str, dict[str, Any]]):
        self.call = call
        self.turns: list[Any] = []
        self.outcome: Any = None

    def run(self, turn: Any) -> list[Any]:
        self.turns.append(turn)
        name, arguments = self.call
        try:
            self.outcome = asyncio.run(turn.invoke(name, arguments))
        except StructuredError as exc:
            self.outcome = exc
        return [ToolCall("c1", name, arguments), TextChunk("done")]


def _context(world: dict[str, Any], actor: Any = None) -> tuple[ToolContext, Any]:
    overlay = world["container"].plan_workspace.overlay()
    return ToolContext(view=overlay, workspace=str(world["ws"]), actor=actor), overlay


def _run(world: dict[str, Any], name: str, arguments: dict[str, Any], actor: Any = None) -> tuple[Any, Any]:
    tool = world["container"].tool_registry.get(name)
    context, overlay = _context(world, actor)
    try:
        return tool.run(arguments, context), overlay
    except StructuredError as exc:
        return exc, overlay


def _assert_refused(outcome: Any, path: str) -> None:
    assert isinstance(outcome, StructuredError), f"{path!r} was not refused: {outcome!r}"
    assert outcome.data.get("reason") in REASONS | {"is_directory"} or outcome.data.get("errors"), outcome.data
    assert SECRET not in repr(outcome.data) and SECRET not in outcome.message


# Each registered path tool and how an attack path goes into its arguments.
PATH_ATTACKS = {
    "fs.read": lambda p: {"path": p},
    "fs.write": lambda p: {"path": p, "content": "pwned"},
    "patch.apply": lambda p: {"patch": _patch(p)},
}
GLOB_ATTACKS = {
    "fs.glob": lambda g: {"pattern": g},
    "fs.search": lambda g: {"pattern": "SECRET", "glob": g},
    "fs.replace": lambda g: {"pattern": "SECRET", "replacement": "pwned", "glob": g},
}
ACTOR_ATTACKS = {"actor.edit"}


def test_every_registered_tool_is_attacked(world):
    names = set(world["container"].tool_registry.names())
    covered = set(PATH_ATTACKS) | set(GLOB_ATTACKS) | ACTOR_ATTACKS | NOT_PATH_TOOLS
    assert names == covered, f"tools without a security case: {sorted(names - covered)}"


@pytest.mark.parametrize("name", sorted(PATH_ATTACKS))
def test_path_tools_refuse_every_escape(world, name):
    for path in [*ESCAPES, *_absolute(world)]:
        arguments = PATH_ATTACKS[name](path)
        outcome, overlay = _run(world, name, arguments)
        _assert_refused(outcome, path)
        assert overlay.changed_paths() == [], (path, overlay.changed_paths())


def test_patch_apply_refuses_escapes_on_either_side_and_renames(world):
    ws = world["ws"]
    attacks = [
        _edit_patch("../outside/secret.txt"), _edit_patch("link_out"), _edit_patch("dir_out/secret.txt"),
        "diff --git a/src/ok.txt b/../escaped.txt\nrename from src/ok.txt\nrename to ../escaped.txt\n",
        "diff --git a/src/ok.txt b/.git/hooks/post-commit\nsimilarity index 100%\n"
        "rename from src/ok.txt\nrename to .git/hooks/post-commit\n",
        f"--- a/src/ok.txt\n+++ b/{ws.parent}/outside/new.txt\n@@ -1 +1 @@\n-inside\n+x\n",
        "--- \"a/..\\057outside\\057secret.txt\"\n+++ \"b/..\\057outside\\057secret.txt\"\n@@ -1 +1 @@\n-x\n+y\n",
    ]
    for patch in attacks:
        outcome, overlay = _run(world, "patch.apply", {"patch": patch})
        _assert_refused(outcome, patch)
        assert overlay.changed_paths() == []


@pytest.mark.parametrize("name", sorted(GLOB_ATTACKS))
def test_glob_tools_refuse_escaping_patterns_and_never_list_outside(world, name):
    for pattern in ["../**", "../outside/*", "/etc/*", "src/../../**", str(world["outside"]) + "/*"]:
        outcome, _ = _run(world, name, GLOB_ATTACKS[name](pattern))
        _assert_refused(outcome, pattern)
    for pattern in ["**/*", "**", "*", "dir_out/**", ".git/**", "git_link/*", "state/**", "nested/**", "**/.env"]:
        outcome, overlay = _run(world, name, GLOB_ATTACKS[name](pattern))
        assert not isinstance(outcome, StructuredError), (pattern, outcome)
        output = repr(outcome.output)
        assert SECRET not in output and "[core]" not in output, (pattern, output)
        listed = outcome.output.get("paths") or [r["path"] for r in outcome.output.get("results", [])]
        assert not any(p.split("/")[0] in {"link_out", "dir_out", ".git", "git_link", "state", ".env"}
                       or p == "src/rel_out" or "/.git/" in p for p in listed), (pattern, listed)
        assert overlay.changed_paths() == []


def test_actor_edit_shows_no_file_from_outside(world):
    actor = _ScriptedActor(("fs.read", {"path": "src/ok.txt"}))
    paths = [*ESCAPES[:-3], *_absolute(world), "src/ok.txt"]
    outcome, _ = _run(world, "actor.edit", {"instruction": "edit", "paths": paths, "glob": "**", "max_files": 200}, actor)
    assert not isinstance(outcome, StructuredError), outcome
    shown = actor.turns[0].context["files"]
    assert list(shown) == ["src/ok.txt"]
    assert SECRET not in repr(shown)


@pytest.mark.parametrize("tool", ["fs.read", "fs.write", "patch.apply"])
def test_actor_edit_tool_calls_are_guarded_too(world, tool):
    for path in ["../outside/secret.txt", "dir_out/secret.txt", "link_out", ".git/config", "state/marker",
                 str(world["outside"] / "secret.txt")]:
        actor = _ScriptedActor((tool, PATH_ATTACKS[tool](path)))
        outcome, overlay = _run(world, "actor.edit", {"instruction": "edit"}, actor)
        assert not isinstance(outcome, StructuredError), outcome
        _assert_refused(actor.outcome, path)
        assert outcome.writes == [] and overlay.changed_paths() == []


def test_actor_edit_keeps_nothing_of_a_refused_rename(world):
    rename = "diff --git a/src/ok.txt b/../escaped.txt\nrename from src/ok.txt\nrename to ../escaped.txt\n"
    actor = _ScriptedActor(("patch.apply", {"patch": rename}))
    outcome, overlay = _run(world, "actor.edit", {"instruction": "move it"}, actor)
    assert not isinstance(outcome, StructuredError), outcome  # the model is told, and goes on
    _assert_refused(actor.outcome, rename)
    assert overlay.changed_paths() == []  # the source is not deleted behind its back


# -- apply and rollback: the disk changes after the plan was executed ----------------------
def _planned(world: dict[str, Any], path: str, text: str = "planned\n") -> Any:
    overlay = world["container"].plan_workspace.overlay()
    overlay.write_bytes(path, text.encode())
    return overlay


def _swap_for_link(directory: Path, target: Path) -> None:
    for child in directory.iterdir():
        child.unlink()
    directory.rmdir()
    os.symlink(target, directory)


def test_apply_refuses_a_parent_swapped_for_a_link_out(world):
    ws, outside = world["ws"], world["outside"]
    (ws / "pkg").mkdir()
    (ws / "pkg" / "secret.txt").write_text("old\n")
    overlay = _planned(world, "pkg/secret.txt")
    _swap_for_link(ws / "pkg", outside)  # after execute, before apply
    with pytest.raises(StructuredError) as refused:
        world["container"].plan_workspace.apply("plan-1", overlay, force=True)
    assert refused.value.data["reason"] == "symlink_escape"
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


def test_apply_refuses_a_parent_swapped_for_a_link_into_git(world):
    ws = world["ws"]
    (ws / "hooks").mkdir()
    overlay = _planned(world, "hooks/post-commit", "#!/bin/sh\necho pwned\n")
    (ws / "hooks").rmdir()
    os.symlink(ws / ".git", ws / "hooks")
    with pytest.raises(StructuredError) as refused:
        world["container"].plan_workspace.apply("plan-2", overlay, force=True)
    assert refused.value.data["reason"] == "symlink_escape"  # no link is followed, wherever it leads
    assert not (ws / ".git" / "post-commit").exists()


def test_apply_refuses_a_file_swapped_for_a_link_out(world):
    ws, outside = world["ws"], world["outside"]
    overlay = _planned(world, "src/ok.txt")
    (ws / "src" / "ok.txt").unlink()
    os.symlink(outside / "secret.txt", ws / "src" / "ok.txt")
    with pytest.raises(StructuredError) as refused:
        world["container"].plan_workspace.apply("plan-3", overlay, force=True)
    assert refused.value.data["reason"] == "not_a_regular_file"


def test_rollback_refuses_a_parent_swapped_for_a_link_out(world):
    ws, outside = world["ws"], world["outside"]
    (ws / "pkg").mkdir()
    (ws / "pkg" / "secret.txt").write_text("old\n")
    overlay = _planned(world, "pkg/secret.txt")
    checkpoint = world["container"].plan_workspace.apply("plan-4", overlay, force=False)
    assert (ws / "pkg" / "secret.txt").read_text() == "planned\n"
    _swap_for_link(ws / "pkg", outside)
    with pytest.raises(StructuredError) as refused:
        world["container"].plan_workspace.rollback(checkpoint, force=True)
    assert refused.value.data["reason"] == "symlink_escape"


def test_apply_over_a_hard_link_leaves_the_other_name_alone(world):
    ws, outside = world["ws"], world["outside"]
    os.link(outside / "secret.txt", ws / "src" / "hard.txt")
    overlay = world["container"].plan_workspace.overlay()
    overlay.write_bytes("src/hard.txt", b"replaced\n")
    world["container"].plan_workspace.apply("plan-5", overlay, force=False)
    assert (ws / "src" / "hard.txt").read_text() == "replaced\n"  # a new file was renamed over the name


def test_a_journal_that_names_paths_outside_is_never_applied(world):
    import json

    ws, outside = world["ws"], world["outside"]
    journal = ws / "state" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    blob = world["container"].plan_workspace.put_blob(b"pwned\n")
    for index, path in enumerate(["../outside/secret.txt", "dir_out/secret.txt", ".git/config", "/etc/passwd"]):
        entry = {"path": path, "existed": False, "pre_blob": None, "pre_mode": None, "post_blob": blob, "post_mode": 420}
        checkpoint = {"plan_id": f"evil-{index}", "created_at": "2026-01-01T00:00:00Z", "entries": [entry],
                      "created_dirs": []}
        (journal / f"evil-{index}.json").write_text(json.dumps({"op": "apply", "status": "started",
                                                                "checkpoint": checkpoint}))
    reports = world["container"].plan_workspace.recover()
    assert len(reports) == 4 and {r.outcome for r in reports} == {"failed"}
    assert all(r.error["reason"] in REASONS for r in reports), reports
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.parametrize("name", sorted(PATH_ATTACKS))
def test_paths_the_os_cannot_look_up_are_refused_without_the_servers_path(world, name):
    ws = world["ws"]
    os.symlink(ws / "loop", ws / "loop")  # a link to itself
    for path in ["loop", "loop/x", "x" * 5000, "a/" * 3000 + "b"]:
        outcome, overlay = _run(world, name, PATH_ATTACKS[name](path))
        assert isinstance(outcome, StructuredError), (path, outcome)  # a structured refusal, never a bare OSError
        assert str(ws) not in outcome.message and str(ws) not in repr(outcome.data), outcome.data
        assert overlay.changed_paths() == []


async def test_a_plan_over_stdio_refuses_a_rename_out_and_changes_nothing(tmp_path):
    from tests.e2e.rawclient import RawServer

    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "ok.txt").write_text("inside\n")
    patch = "diff --git a/src/ok.txt b/../escaped.txt\nrename from src/ok.txt\nrename to ../escaped.txt\n"
    server = await RawServer.start("--memory", "--workspace", str(ws))
    try:
        await server.initialize()
        plan = (await server.request(1, "_cleveragents/plan/use", {
            "action_name": "apply-patch", "arguments": {"patch": patch}, "automation_profile": "autonomous"}))["result"]
        error = (await server.request(2, "_cleveragents/plan/execute", {"plan_id": plan["plan_id"]}))["error"]
        diff = (await server.request(3, "_cleveragents/plan/diff", {"plan_id": plan["plan_id"]}))["result"]
    finally:
        server.close_stdin()
        await server.proc.communicate()
    assert error["code"] == -32003 and error["data"]["reason"] == "outside_workspace", error
    assert diff["files"] == []  # nothing of the refused step is in the plan
    assert (ws / "src" / "ok.txt").read_text() == "inside\n" and not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_write_over_what_is_not_a_regular_file_is_refused_at_once(world, kind):
    """The overlay used to take the write and leave the refusal to the apply."""
    ws = world["ws"]
    os.mkfifo(ws / "special") if kind == "fifo" else (ws / "special").mkdir()
    for name, arguments in (("fs.write", {"path": "special", "content": "x"}),
                            ("fs.replace", {"pattern": "x", "replacement": "y", "glob": "special"})):
        outcome, overlay = _run(world, name, arguments)
        if name == "fs.write":
            assert isinstance(outcome, StructuredError), outcome
            assert outcome.data["reason"] in {"not_a_regular_file", "is_directory"}, outcome.data
        assert overlay.changed_paths() == []
