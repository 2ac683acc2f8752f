"""Actions: binding and rendering, loading from TOML, and the registries."""

import os
from pathlib import Path

import pytest

from cleveragents.app.registry import ActionRegistry, RegistryService, ToolRegistry
from cleveragents.domain.actions import Action, ActionArgument, ActionStep
from cleveragents.domain.errors import (
    DuplicateEntityError,
    ResourceNotFoundError,
    ValidationError,
)
from cleveragents.domain.tools import ToolContext
from cleveragents.infra.actions import ACTIONS_DIR, actions_fingerprint, load_actions
from cleveragents.infra.tools.builtin import builtin_tools
from cleveragents.infra.tools.fs import ReadTool, ReplaceTool
from cleveragents.infra.workspace.blobs import BlobStore
from cleveragents.infra.workspace.overlay import Overlay

GOOD = '''
name = "rename"
description = "Rename a word"

[arguments.old]
type = "string"

[arguments.new]
type = "string"

[arguments.glob]
type = "string"
required = false
default = "**/*.py"

[[steps]]
tool = "fs.replace"
rationale = "whole words"
arguments = { pattern = "\\\\b{{ old }}\\\\b", replacement = "{{ new }}", glob = "{{ glob }}" }
'''


def action(*arguments: ActionArgument, steps: tuple[ActionStep, ...] | None = None) -> Action:
    return Action("demo", "A demo", arguments, steps or (ActionStep("s", "fs.write", {"path": "{{ path }}"}),))


def write_action(workspace: Path, name: str, text: str) -> Path:
    path = workspace / ACTIONS_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def registries(workspace: Path) -> tuple[ToolRegistry, ActionRegistry]:
    tools = ToolRegistry(builtin_tools())
    return tools, ActionRegistry(lambda: load_actions(workspace), tools, lambda: actions_fingerprint(workspace))


# --- binding and rendering -------------------------------------------------------------

def test_bind_checks_types_and_fills_defaults():
    demo = action(ActionArgument("path", "string"), ActionArgument("count", "integer", required=False, default=2),
                  ActionArgument("tags", "array", required=False))
    assert demo.bind({"path": "a.py"}) == {"path": "a.py", "count": 2, "tags": None}
    with pytest.raises(ValidationError) as caught:
        demo.bind({"count": True, "extra": 1})
    assert caught.value.data["action"] == "demo"
    assert {(tuple(e["loc"]), e["type"]) for e in caught.value.data["errors"]} == {
        (("extra",), "unknown_argument"), (("path",), "missing"), (("count",), "type_error")}


def test_render_keeps_whole_placeholders_typed_and_substitutes_inside_strings():
    demo = action(
        ActionArgument("name", "string"), ActionArgument("n", "integer"), ActionArgument("flag", "boolean"),
        ActionArgument("unset", "string", required=False),
        steps=(ActionStep("s", "x.y", {
            "n": "{{ n }}", "flag": "{{flag}}", "text": "name={{ name }} n={{ n }} flag={{ flag }}",
            "nested": {"list": ["{{ name }}", 1, {"deep": "{{ n }}"}]}, "unset": "{{ unset }}",
        }),),
    )
    (step,) = demo.render(demo.bind({"name": "x", "n": 3, "flag": False}))
    assert step.arguments == {"n": 3, "flag": False, "text": "name=x n=3 flag=false",
                              "nested": {"list": ["x", 1, {"deep": 3}]}}


def test_an_unknown_placeholder_is_refused_when_the_action_is_defined_and_rendered():
    with pytest.raises(ValidationError) as caught:
        action(ActionArgument("path", "string"), steps=(ActionStep("s", "fs.write", {"content": "{{ other }}"}),))
    assert caught.value.data["errors"][0]["type"] == "unknown_placeholder"
    with pytest.raises(ValidationError):
        action(ActionArgument("path", "string")).render({})


def test_an_action_definition_is_checked():
    with pytest.raises(ValidationError) as caught:
        Action("bad name", "", (ActionArgument("x", "float"), ActionArgument("y", "integer", default="1")),  # type: ignore[arg-type]
               ())
    assert [e["loc"] for e in caught.value.data["errors"]] == [["name"], ["arguments", "x", "type"],
                                                               ["arguments", "y", "default"], ["steps"]]


# --- loading ---------------------------------------------------------------------------

def test_without_an_actions_directory_there_are_the_builtin_actions(workspace):
    actions, problems = load_actions(workspace)
    assert [a.name for a in actions] == ["apply-patch", "edit", "replace", "run"] and problems == []
    assert {a.source for a in actions} == {"builtin"}


def test_a_workspace_action_loads_and_may_override_a_builtin(workspace):
    write_action(workspace, "rename.toml", GOOD)
    write_action(workspace, "replace.toml", GOOD.replace('name = "rename"', 'name = "replace"'))
    actions, problems = load_actions(workspace)
    by_name = {a.name: a for a in actions}
    assert problems == [] and sorted(by_name) == ["apply-patch", "edit", "rename", "replace", "run"]
    assert by_name["replace"].source == ".cleveragents/actions/replace.toml"
    rename = by_name["rename"]
    assert [(a.name, a.required, a.default) for a in rename.arguments] == [
        ("old", True, None), ("new", True, None), ("glob", False, "**/*.py")]
    assert rename.steps[0].id == "step-1" and rename.steps[0].arguments["pattern"] == "\\b{{ old }}\\b"


def test_a_file_with_a_syntax_error_is_a_problem_with_its_line(workspace):
    write_action(workspace, "good.toml", GOOD)
    write_action(workspace, "broken.toml", 'description = "x"\n[[steps]]\ntool = fs.read\n')
    actions, problems = load_actions(workspace)
    assert "rename" in {a.name for a in actions}
    (problem,) = problems
    assert problem["file"] == ".cleveragents/actions/broken.toml" and problem["line"] == 3
    assert str(workspace) not in problem["message"]


def test_a_file_nested_too_deep_is_a_problem_and_hides_nothing_else(workspace):
    """Its values would become plan arguments that every plan list serves."""
    write_action(workspace, "good.toml", GOOD)
    write_action(workspace, "parser.toml", 'description = "x"\nv = ' + "[" * 5000 + "]" * 5000 + "\n")
    deep = GOOD.replace('glob = "{{ glob }}"', 'glob = ' + "[" * 70 + '"x"' + "]" * 70)
    write_action(workspace, "deep.toml", deep)
    actions, problems = load_actions(workspace)
    assert "rename" in {a.name for a in actions}
    by_file = {p["file"].rsplit("/", 1)[1]: p for p in problems}
    assert set(by_file) == {"parser.toml", "deep.toml"}
    assert "nest deeper than 64 levels" in by_file["parser.toml"]["message"]
    assert by_file["deep.toml"]["key"].startswith("steps.0.arguments.glob.0.0")


def test_a_bad_key_is_a_problem_naming_the_key(workspace):
    write_action(workspace, "typo.toml", GOOD.replace('rationale = "whole words"', 'rationale = "x"\ntoll = "y"'))
    write_action(workspace, "type.toml", GOOD.replace('type = "string"\nrequired', 'type = "float"\nrequired'))
    write_action(workspace, "placeholder.toml", GOOD.replace("{{ new }}", "{{ neww }}"))
    _, problems = load_actions(workspace)
    by_file = {p["file"].rsplit("/", 1)[1]: p for p in problems}
    assert by_file["typo.toml"]["key"] == "steps[0].toll" and by_file["typo.toml"]["line"] == 19
    assert by_file["type.toml"]["key"] == "arguments.glob.type"
    assert by_file["placeholder.toml"]["key"] == "steps[0].arguments"
    assert "neww" in by_file["placeholder.toml"]["message"]


def test_a_bad_key_in_a_file_of_many_tables_is_found_without_backtracking(workspace):
    # A table header's pattern crossed lines: Python's re took minutes over such a file,
    # holding the GIL; an action file can come with a cloned repository.
    tables = "".join(f"[arguments.a{n}]\ntype = \"string\"\n" for n in range(20_000))
    write_action(workspace, "many.toml", f'description = "x"\n{tables}[[steps]]\ntool = 5\n')
    (problem,) = load_actions(workspace)[1]
    assert (problem["key"], problem["line"]) == ("steps[0].tool", 40_003)


def test_a_second_action_with_the_same_name_is_a_problem(workspace):
    write_action(workspace, "a.toml", GOOD)
    write_action(workspace, "b.toml", GOOD)
    actions, problems = load_actions(workspace)
    assert next(a for a in actions if a.name == "rename").source.endswith("a.toml")
    assert [(p["file"].rsplit("/", 1)[1], p["key"]) for p in problems] == [("b.toml", "name")]


# --- registries ------------------------------------------------------------------------

def test_tools_are_listed_sorted_and_by_namespace():
    tools = ToolRegistry(builtin_tools())
    assert [t["name"] for t in tools.list_tools("fs")["tools"]] == [
        "fs.glob", "fs.read", "fs.replace", "fs.search", "fs.write"]
    (shell,) = tools.list_tools("shell")["tools"]
    assert shell["namespace"] == "shell" and shell["input_schema"]["required"] == ["command"]
    assert tools.list_tools("nope") == {"tools": []}
    with pytest.raises(DuplicateEntityError):
        tools.register(ReadTool())
    with pytest.raises(ResourceNotFoundError) as caught:
        tools.get("fs.delete")
    assert "fs.read" in caught.value.data["available"]


async def test_the_action_list_reloads_when_a_file_changes(workspace):
    _, actions = registries(workspace)
    service = RegistryService(actions)
    assert [a["name"] for a in (await service.list_actions())["actions"]] == ["apply-patch", "edit", "replace", "run"]
    path = write_action(workspace, "rename.toml", GOOD)
    listing = await service.list_actions()
    assert "rename" in [a["name"] for a in listing["actions"]] and listing["problems"] == []
    before = path.stat()
    path.write_text(GOOD + "oops = [\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same mtime: the size tells
    assert [p["file"] for p in actions.list_actions()["problems"]] == [".cleveragents/actions/rename.toml"]
    with pytest.raises(ResourceNotFoundError) as caught:
        actions.get("rename")
    assert caught.value.data == {"action": "rename", "available": ["apply-patch", "edit", "replace", "run"]}


def test_resolve_binds_renders_and_checks_each_step_against_its_tool(workspace, tmp_path):
    (workspace / "a.py").write_text("old = old\n")
    _, actions = registries(workspace)
    resolved = actions.resolve("replace", {"pattern": "old", "replacement": "new", "glob": "*.py"})
    (step,) = resolved.steps
    assert resolved.bound["ignore_case"] is False
    assert step.arguments["count"] == 0 and step.arguments["glob"] == "*.py"
    overlay = Overlay(workspace, BlobStore(tmp_path / "blobs"))
    ReplaceTool().run(step.arguments, ToolContext(view=overlay, workspace=str(workspace)))
    assert overlay.read_bytes("a.py") == b"new = new\n"


def test_resolve_names_the_step_and_field_that_fail(workspace):
    write_action(workspace, "ghost.toml", '[[steps]]\nid = "haunt"\ntool = "ghost.boo"\n')
    _, actions = registries(workspace)
    with pytest.raises(ValidationError) as caught:
        actions.resolve("replace", {"pattern": "(", "replacement": "x"})
    assert caught.value.data["step"] == "replace" and caught.value.data["tool"] == "fs.replace"
    assert caught.value.data["errors"][0]["loc"] == ["pattern"]
    with pytest.raises(ResourceNotFoundError) as caught:
        actions.resolve("ghost", {})
    assert caught.value.data["step"] == "haunt" and caught.value.data["tool"] == "ghost.boo"
