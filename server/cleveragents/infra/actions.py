'''Actions: the built-in ones and those a workspace defines in TOML.

A workspace defines one action per file in ``.cleveragents/actions/*.toml``::

    # .cleveragents/actions/rename-symbol.toml
    name = "rename-symbol"        # optional: the file's stem by default
    description = "Rename an identifier in the Python files"

    [arguments.old]               # one table per argument, in order
    type = "string"               # string, integer, number, boolean, array or object
    description = "The current name"

    [arguments.new]
    type = "string"

    [arguments.glob]
    type = "string"
    required = false
    default = "**/*.py"

    [[steps]]                     # the steps, in order
    id = "rename"                 # optional: step-<n> by default
    tool = "fs.replace"
    rationale = "Whole words only"
    arguments = { pattern = "\\\\b{{ old }}\\\\b", replacement = "{{ new }}", glob = "{{ glob }}" }

A workspace action named like a built-in one replaces it (its ``source`` says so).
A bad file is a problem ``{file, message, key?, line?, column?}``; it hides
neither the other files nor the built-in actions.
'''

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, cast

from cleveragents.config import STATE_DIRNAME
from cleveragents.domain.actions import Action, ActionArgument, ActionStep, ArgumentType
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.json_limits import MAX_DEPTH, first_too_deep
from cleveragents.infra.regex import compile_pattern

ACTIONS_DIR = Path(STATE_DIRNAME) / "actions"
_ACTION_KEYS = {"name", "description", "arguments", "steps"}
_ARGUMENT_KEYS = {"type", "required", "default", "description"}
_STEP_KEYS = {"id", "tool", "arguments", "rationale"}
_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")

BUILTIN_ACTIONS: tuple[Action, ...] = (
    Action(
        "replace", "Replace a regular expression in the files matching a glob.",
        (ActionArgument("pattern", "string", description="Regular expression, RE2 syntax (docs/tools.md)"),
         ActionArgument("replacement", "string", description="re.sub replacement: \\1 or \\g<name> for a group"),
         ActionArgument("glob", "string", required=False, default="**/*"),
         ActionArgument("ignore_case", "boolean", required=False, default=False)),
        (ActionStep("replace", "fs.replace", {
            "pattern": "{{ pattern }}", "replacement": "{{ replacement }}", "glob": "{{ glob }}",
            "ignore_case": "{{ ignore_case }}",
        }),),
    ),
    Action(
        "apply-patch", "Apply a unified diff.",
        (ActionArgument("patch", "string", description="A unified diff"),),
        (ActionStep("apply", "patch.apply", {"patch": "{{ patch }}"}),),
    ),
    Action(
        "run", "Run an allow-listed command in the workspace.",
        (ActionArgument("command", "string"),
         ActionArgument("timeout", "number", required=False, default=60)),
        (ActionStep("run", "shell.run", {"command": "{{ command }}", "timeout": "{{ timeout }}"}),),
    ),
    Action(
        "edit", "Ask the actor (the session's model) to edit the files matching a glob.",
        (ActionArgument("instruction", "string", description="What to change, in plain words"),
         ActionArgument("glob", "string", required=False, default="**/*",
                        description="The files the edit concerns")),
        (ActionStep("edit", "actor.edit", {"instruction": "{{ instruction }}", "glob": "{{ glob }}"},
                    "The actor edits; its edits are reviewed in the plan's diff"),),
    ),
)


class _Problem(Exception):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key, self.message = key, message


def _key(loc: list[Any]) -> str:
    """``["steps", 0, "tool"]`` -> ``steps[0].tool``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _table(value: Any, key: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Problem(key, f"{key} must be a table")
    for name in value:
        if name not in allowed:
            raise _Problem(f"{key}.{name}" if key else name, f"unknown key {name!r}; expected one of "
                                                             f"{', '.join(sorted(allowed))}")
    return value


def _string(table: dict[str, Any], name: str, key: str, default: str | None = None) -> str:
    value = table.get(name, default)
    if not isinstance(value, str):
        raise _Problem(_key([key, name]) if key else name,
                       f"{name} must be a string" if name in table else f"{name} is required")
    return value


def _parse(document: dict[str, Any], stem: str, source: str) -> Action:
    _table(document, "", _ACTION_KEYS)
    table = document.get("arguments", {})
    if not isinstance(table, dict):
        raise _Problem("arguments", "arguments must be tables: [arguments.<name>]")
    arguments = []
    for name, spec in table.items():
        key = f"arguments.{name}"
        spec = _table(spec, key, _ARGUMENT_KEYS)
        if not isinstance(spec.get("required", True), bool):
            raise _Problem(f"{key}.required", "required must be true or false")
        arguments.append(ActionArgument(
            name, cast(ArgumentType, _string(spec, "type", key)), spec.get("required", True), spec.get("default"),
            _string(spec, "description", key, ""),
        ))
    steps = document.get("steps")
    if not isinstance(steps, list):
        raise _Problem("steps", "steps is required: an array of tables ([[steps]])")
    parsed = []
    for index, step in enumerate(steps):
        key = f"steps[{index}]"
        step = _table(step, key, _STEP_KEYS)
        step_arguments = step.get("arguments", {})
        if not isinstance(step_arguments, dict):
            raise _Problem(f"{key}.arguments", "arguments must be a table")
        parsed.append(ActionStep(_string(step, "id", key, f"step-{index + 1}"), _string(step, "tool", key),
                                 step_arguments, _string(step, "rationale", key, "")))
    return Action(_string(document, "name", "", stem), _string(document, "description", "", ""),
                  tuple(arguments), tuple(parsed), source)


def _line_of(text: str, key: str) -> int | None:
    """Best effort: the line defining ``key``'s last part, when only one line does."""
    leaf = [part for part in re.split(r"[.\[\]]", key) if part and not part.isdigit()][-1]
    # RE2: a table header's `[^\]]*` crosses lines, so Python's re backtracked over the whole
    # file from every `[` at a line start; an action file can come with a cloned repository.
    pattern = compile_pattern(rf"(?:^|[{{,])\s*\"?{re.escape(leaf)}\"?\s*=|^\s*\[+[^\]]*\b{re.escape(leaf)}\b[^\]]*\]+",
                              multiline=True)
    data = text.encode("utf-8")
    lines = {data.count(b"\n", 0, spans[0][0]) + 1 for spans in pattern.finditer(data)}
    return lines.pop() if len(lines) == 1 else None


def load_action_file(path: Path, workspace: Path) -> Action:
    """One action; ``ValidationError`` with data ``{file, key?, line?, column?}``."""
    source = path.relative_to(workspace).as_posix()
    try:
        text = path.read_bytes().decode("utf-8")
        document = tomllib.loads(text)
    except UnicodeDecodeError:
        raise ValidationError(f"{source} is not UTF-8", {"file": source}) from None
    except tomllib.TOMLDecodeError as exc:
        data: dict[str, Any] = {"file": source}
        position = _TOML_POSITION.search(str(exc))
        if position:
            data.update(line=int(position.group(1)), column=int(position.group(2)))
        else:  # "at end of document"
            data["line"] = text.count("\n") + 1
        raise ValidationError(f"{source}: {exc}", data) from None
    except RecursionError:
        raise ValidationError(f"{source}: arrays or tables nest deeper than {MAX_DEPTH} levels",
                              {"file": source}) from None
    if (loc := first_too_deep(document, MAX_DEPTH)) is not None:
        # Its values become plans' arguments, which every plan list serves.
        key = ".".join(str(part) for part in loc[:8]) + ("..." if len(loc) > 8 else "")
        raise ValidationError(f"{source}: {key}: arrays or tables nest deeper than {MAX_DEPTH} levels",
                              {"file": source, "key": key})
    try:
        return _parse(document, path.stem, source)
    except _Problem as problem:
        located = {"line": line} if (line := _line_of(text, problem.key)) else {}
        raise ValidationError(f"{source}: {problem.message}", {"file": source, "key": problem.key, **located}) from None
    except ValidationError as exc:  # the action itself is wrong: an unknown placeholder, a bad type
        first = exc.data.get("errors", [{}])[0]
        key = _key(first.get("loc", []))
        located = {"line": line} if key and (line := _line_of(text, key)) else {}
        raise ValidationError(f"{source}: {key}: {first.get('msg', exc.message)}",
                              {"file": source, "key": key, **located, "errors": exc.data.get("errors", [])}) from None


def action_files(workspace: Path) -> list[Path]:
    directory = workspace / ACTIONS_DIR
    return sorted(directory.glob("*.toml")) if directory.is_dir() else []


def actions_fingerprint(workspace: Path) -> tuple[tuple[str, int, int], ...]:
    """Changes whenever an action file is added, removed or rewritten."""
    stamps = []
    for path in action_files(workspace):
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed while listing
            continue
        stamps.append((path.name, stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def load_actions(workspace: Path) -> tuple[list[Action], list[dict[str, Any]]]:
    """Every action, sorted by name, and the problems of the files that failed."""
    actions = {action.name: action for action in BUILTIN_ACTIONS}
    defined_in: dict[str, str] = {}
    problems: list[dict[str, Any]] = []
    for path in action_files(workspace):
        try:
            action = load_action_file(path, workspace)
        except ValidationError as exc:
            problems.append({"message": exc.message, **exc.data})
            continue
        except OSError as exc:
            source = path.relative_to(workspace).as_posix()
            problems.append({"message": f"{source}: {exc.strerror}", "file": source})
            continue
        if action.name in defined_in:
            problems.append({"message": f"{action.source}: action {action.name!r} is already defined in "
                                        f"{defined_in[action.name]}", "file": action.source, "key": "name"})
            continue
        defined_in[action.name] = action.source
        actions[action.name] = action
    return sorted(actions.values(), key=lambda action: action.name), problems
