"""Glob patterns over workspace paths (infra.workspace.globs)."""

import pytest

from cleveragents.infra.workspace.globs import compile_glob, literal_prefix


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),
    ("**/*.py", "a.py", True),
    ("**/*.py", "src/pkg/a.py", True),
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/x/y/a.py", True),
    ("src/**/*.py", "lib/a.py", False),
    ("src/**", "src/x/y", True),
    ("**", "any/thing/at/all", True),
    ("a?.txt", "ab.txt", True),
    ("a?.txt", "a/.txt", False),
    ("[ab].md", "b.md", True),
    ("[!ab].md", "c.md", True),
    ("[!ab].md", "a.md", False),
    ("[^].md", "^.md", True),
    ("[.md", "[.md", True),
    ("a.py", "a_py", False),
    ("*.py", ".hidden.py", True),
])
def test_glob_semantics(pattern, path, matches):
    assert bool(compile_glob(pattern).fullmatch(path)) is matches


def test_literal_prefix_stops_at_the_first_wildcard():
    assert literal_prefix("src/pkg/**/*.py") == ["src", "pkg"]
    assert literal_prefix("src/a.py") == ["src"]
    assert literal_prefix("**/x") == []
    assert literal_prefix("s*c/x") == []
