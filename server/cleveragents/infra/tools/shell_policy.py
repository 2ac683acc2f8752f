"""What ``shell.run`` may run: an allow-list of command prefixes, the arguments that
would turn an allowed program into a launcher, and arguments naming paths outside
the workspace.

An allow-list entry is a command prefix (``git diff``, ``python -m pytest``): the
argv must start with its words. What follows the prefix is checked twice. Options
that make the program run code or commands given on its command line (``python
-c``, ``git -c alias.x=!cmd``, ``make --eval``, a make variable override) are
refused unless the prefix itself names them, so an action can allow ``python3 -c``
on purpose but ``python`` alone never means it. Every argument (and an option's
attached value) that resolves outside the workspace, symlinks followed, is refused.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence

from cleveragents.domain.errors import AuthorizationError
from cleveragents.infra.workspace._fs import within

DEFAULT_ALLOW = (
    "git status", "git diff", "git log", "git show", "git ls-files", "git grep", "git blame", "git rev-parse",
    "python -m pytest", "python3 -m pytest", "pytest", "ruff check", "ruff format --check", "make", "npm test",
    "npm run", "ls", "cat", "echo", "grep", "true", "false",
)


def _option_name(argument: str) -> str:
    return argument.split("=", 1)[0]


def _short_flags(argument: str, takes_value: str) -> str:
    """The letters of a single-dash bundle (``-Ic``), up to one that takes a value."""
    if not argument.startswith("-") or argument.startswith("--"):
        return ""
    letters = ""
    for letter in argument[1:]:
        if letter in takes_value:
            break
        letters += letter
    return letters


# An interpreter under a bare prefix ("python", "node") may run scripts from the
# workspace, not code from its arguments: these are refused anywhere in the tail, which
# also catches them after an option value the scan can't tell from a script name.
# A prefix that names the script or module ("python -m pytest") checks nothing.
def _python(prefix: Sequence[str], tail: Sequence[str]) -> str | None:
    if len(prefix) > 1:
        return None
    return next((argument for argument in tail if set(_short_flags(argument, "WXQ")) & {"c", "m"}), None)


_NODE_CODE = {"--eval", "--print", "--require", "--import", "--loader", "--experimental-loader", "--interactive"}


def _node(prefix: Sequence[str], tail: Sequence[str]) -> str | None:
    if len(prefix) > 1:
        return None
    return next((argument for argument in tail
                 if _option_name(argument) in _NODE_CODE or set(_short_flags(argument, "")) & set("epri")), None)


_GIT_GLOBAL_VALUE = {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"}
_GIT_GLOBAL_CODE = {"-c", "--config-env", "--exec-path"}
_GIT_CODE = {"--upload-pack", "--receive-pack", "--exec", "--extcmd", "--open-files-in-pager"}
# Subcommands that run commands they are given or that configuration names.
_GIT_LAUNCHERS = {"config", "difftool", "mergetool", "filter-branch", "bisect", "submodule", "send-email",
                  "instaweb", "daemon", "credential", "rebase", "clone", "archive"}


def _git(prefix: Sequence[str], tail: Sequence[str]) -> str | None:
    global_position, skip = len(prefix) == 1, False
    for argument in tail:
        if skip:
            skip = False
            continue
        if global_position:
            if argument in _GIT_GLOBAL_VALUE:
                skip = True
                continue
            if _option_name(argument) in _GIT_GLOBAL_CODE or argument.startswith("-c"):
                return argument
            if not argument.startswith("-"):
                global_position = False
                if argument in _GIT_LAUNCHERS:
                    return argument
                continue
        if _option_name(argument) in _GIT_CODE or argument.startswith("-O"):
            return argument
    return None


_MAKE_OVERRIDE = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*\s*[:+?!]*=")


def _make(prefix: Sequence[str], tail: Sequence[str]) -> str | None:
    # A variable override can put any command in a recipe that expands it.
    return next((argument for argument in tail
                 if _option_name(argument) == "--eval" or argument.startswith("-E") or _MAKE_OVERRIDE.match(argument)),
                None)


_NPM_CODE = {"--script-shell", "--node-options", "--call", "-c"}
_NPM_LAUNCHERS = {"exec", "x", "explore", "install", "i", "ci", "rebuild", "config", "set", "init", "create"}


def _npm(prefix: Sequence[str], tail: Sequence[str]) -> str | None:
    subcommand_position = len(prefix) == 1
    for argument in tail:
        if _option_name(argument) in _NPM_CODE:
            return argument
        if subcommand_position and not argument.startswith("-"):
            if argument in _NPM_LAUNCHERS:
                return argument
            subcommand_position = False
    return None


_FIND_ACTIONS = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}


def _find(prefix: Sequence[str], tail: Sequence[str]) -> str | None:
    return next((argument for argument in tail if argument in _FIND_ACTIONS), None)


CODE_OPTIONS: dict[str, Callable[[Sequence[str], Sequence[str]], str | None]] = {
    "python": _python, "python3": _python, "node": _node, "git": _git, "make": _make, "npm": _npm,
    "find": _find,
}


def parse_allow(entries: Iterable[str]) -> list[list[str]]:
    return [shlex.split(entry) for entry in entries if entry.strip()]


def matching_prefix(argv: Sequence[str], allowed: Iterable[Sequence[str]]) -> list[str] | None:
    """The longest allow-list prefix ``argv`` starts with."""
    best: list[str] | None = None
    for prefix in allowed:
        if list(argv[:len(prefix)]) == list(prefix) and (best is None or len(prefix) > len(best)):
            best = list(prefix)
    return best


def _path_candidates(argument: str) -> Iterable[str]:
    if not argument.startswith("-"):
        yield argument
    elif "=" in argument:
        yield argument.split("=", 1)[1]
    elif not argument.startswith("--") and len(argument) > 2:
        yield argument[2:]  # -f/etc/x, -Clink: a value that names no path here is let through below


def _outside(root: str, candidate: str) -> bool:
    if not candidate:
        return False
    # A word that is no path (a pattern), or a new file, resolves inside; a link on the
    # way (an existing directory leading out) is followed even when the rest is new.
    return not within(os.path.realpath(os.path.join(root, candidate)), root)


def check_command(argv: Sequence[str], allow_entries: Iterable[str], workspace: str) -> None:
    """Raise ``AuthorizationError`` unless ``argv`` may run in ``workspace``."""
    entries = sorted(allow_entries)
    program = argv[0]
    if "/" in program or os.sep in program or (os.altsep and os.altsep in program):
        raise AuthorizationError("commands are named, not given as paths",
                                 {"command": os.path.basename(program), "allowed": entries, "reason": "path"})
    prefix = matching_prefix(argv, parse_allow(entries))
    if prefix is None:
        raise AuthorizationError(f"{program} is not an allowed command",
                                 {"command": program, "allowed": entries, "reason": "not_allowed"})
    tail = list(argv[len(prefix):])
    check = CODE_OPTIONS.get(program)
    refused = check(prefix, tail) if check else None
    if refused is not None:
        raise AuthorizationError(
            f"{refused!r} would let {program} run a command of its arguments; allow "
            f"'{shlex.join([*prefix, refused])}' explicitly if that is meant",
            {"command": program, "argument": refused, "allowed": entries, "reason": "runs_code"},
        )
    root = os.path.realpath(workspace)
    for argument in tail:
        if any(_outside(root, candidate) for candidate in _path_candidates(argument)):
            raise AuthorizationError(f"{argument!r} names a path outside the workspace",
                                     {"command": program, "argument": argument, "allowed": entries,
                                      "reason": "outside_workspace"})
