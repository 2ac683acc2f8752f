"""Patterns from input (infra.regex): RE2 syntax, refusals that name what RE2 lacks,
Python's replacement templates, and line search that agrees with matching each line
on its own."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleveragents.domain.errors import ValidationError
from cleveragents.infra.regex import (
    MAX_PATTERN_CHARS,
    PatternError,
    Template,
    compile_pattern,
    search_lines,
)
from cleveragents.infra.tools.fs import ReplaceTool, SearchTool
from cleveragents.infra.workspace.globs import compile_glob
from cleveragents.infra.workspace.text import split_lines


@pytest.mark.parametrize(("pattern", "construct"), [
    (r"(a)\1", "backreference"), (r"(?P<x>a)(?P=x)", "backreference"), (r"(?<x>a)\k<x>", "backreference"),
    ("a(?=b)", "lookahead"), ("a(?!b)", "lookahead"), ("(?<=a)b", "lookbehind"), ("(?<!a)b", "lookbehind"),
    ("(?>a+)b", "atomic group"), ("a++", "possessive quantifier"), ("a*+", "possessive quantifier"),
    ("a{2}+", "possessive quantifier"), ("(a)?(?(1)b|c)", "conditional"), (r"a\Z", r"\Z"),
    ("(?#note)a", "comment group"), ("(?P<x>a)(?P>x)", "recursion"), ("(?x) a", "inline flag"),
])
def test_a_construct_re2_lacks_is_refused_by_name(pattern, construct):
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert caught.value.construct == construct
    assert construct in str(caught.value) and "RE2" in str(caught.value)


@pytest.mark.parametrize("pattern", ["(", "[a", "a{1001}", "a**", "\ud800"])
def test_a_broken_pattern_is_refused_without_a_construct(pattern):
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert caught.value.construct is None


def test_patterns_have_a_length_limit():
    with pytest.raises(PatternError, match="longer than"):
        compile_pattern("a" * (MAX_PATTERN_CHARS + 1))


def test_the_tools_refuse_with_the_construct_in_the_error_data():
    with pytest.raises(ValidationError) as caught:
        SearchTool().validate({"pattern": r"(\w+)\s+\1"})
    (error,) = caught.value.data["errors"]
    assert error["loc"] == ["pattern"] and error["type"] == "unsupported_syntax"
    assert error["construct"] == "backreference" and error["syntax"] == "RE2"
    with pytest.raises(ValidationError) as caught:
        ReplaceTool().validate({"pattern": "(?<=x)y", "replacement": "z"})
    assert caught.value.data["errors"][0]["construct"] == "lookbehind"


# -- replacement templates: Python's rules ----------------------------------------------------
GROUPED = r"(?P<name>a)(b)?"
PIECES = [r"\1", r"\2", r"\3", r"\g<1>", r"\g<name>", r"\g<nope>", r"\g<0>", r"\g<>", r"\g<1a>", r"\0", r"\01",
          r"\12", r"\123", r"\400", r"\n", r"\t", r"\q", r"\x41", r"\&", "\\\\", "\\", "a", "é", "{", "-"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=6), st.sampled_from(["a", "ab", "xaby", "é a b"]))
def test_templates_expand_as_python_expands_them(pieces, text):
    template = "".join(pieces)
    try:
        expected: bytes | None = re.sub(GROUPED, template, text).encode()
    except (re.error, IndexError):
        expected = None
    pattern = compile_pattern(GROUPED)
    try:
        got: bytes | None = pattern.subn(Template.parse(template, pattern), text.encode())[0]
    except PatternError:
        got = None
    assert got == expected, template


def test_replacement_counts_and_empty_matches_follow_python():
    for pattern, repl, text, count in [("x*", "-", "abxd", 0), ("a", "b", "aaaa", 2), ("", "-", "é", 0),
                                       ("(?m)^", "> ", "a\nb\n", 0)]:
        compiled = compile_pattern(pattern)
        got = compiled.subn(Template.parse(repl, compiled), text.encode(), count)
        expected = re.subn(pattern, repl, text, count=count)
        assert (got[0].decode(), got[1]) == expected, pattern


# -- line search: as if each line were matched on its own -------------------------------------
# Nothing here tells ASCII from Unicode classes: RE2's \w, \d, \s and \b are ASCII.
LINE_PATTERNS = ["a", "^", "$", "^$", "x*", "é", "a$", "^b", r"\s", ".", "a|é", "[^x]", "b+", "a.b",
                 "$|a", r"a\s*b", "(?i)A", r"\xe9", "[aé]+"]


def _per_line(pattern: str, text: str) -> list[tuple[int, int, str]]:
    regex = re.compile(pattern)
    return [(number, match.start() + 1, line.rstrip("\r\n")[:1000])
            for number, line in enumerate(split_lines(text), start=1)
            for match in regex.finditer(line.rstrip("\r\n"))]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LINE_PATTERNS), st.text(alphabet="ab é\n\r\tx", max_size=40))
def test_line_search_agrees_with_matching_each_line(pattern, text):
    compiled = compile_pattern(pattern, lines=True)
    found = [(m.line, m.column, m.text) for m in search_lines(compiled, text.encode(), 1000)]
    assert found == _per_line(pattern, text)


def test_classes_are_ascii_and_unicode_classes_are_named():
    word, letter = compile_pattern(r"\w+", lines=True), compile_pattern(r"\pL+", lines=True)
    assert [m.column for m in search_lines(word, "é1".encode(), 100)] == [2]
    assert [m.column for m in search_lines(letter, "é1".encode(), 100)] == [1]


def test_a_giant_line_reports_columns_in_characters_and_cuts_its_text():
    line = "é" * 5000 + "needle" + "x" * 5000 + "needle"
    (first, second) = search_lines(compile_pattern("needle", lines=True), (line + "\nend\n").encode(), 1000)
    assert (first.line, first.column, second.column) == (1, 5001, 10007)
    assert first.text == "é" * 1000


def test_no_match_crosses_a_line():
    data = b"ab\ncd\n"
    for pattern in (r"b\nc", r"b[^x]c", r"b\sc", "(?s)b.c"):
        assert list(search_lines(compile_pattern(pattern, lines=True), data, 100)) == [], pattern


# -- globs: RE2 too ------------------------------------------------------------------------------
def test_a_backtracking_glob_answers_at_once():
    name = "names/" + "a" * 250 + ".txt"
    assert not compile_glob("names/*a*a*a*a*a*a*a*a*b").fullmatch(name)
    assert compile_glob("names/*a*a*a*a*a*a*a*a*.txt").fullmatch(name)
    assert not compile_glob("**/a*/**/a*/**/a*/**/a*/**/b").fullmatch("/".join(["a"] * 60) + "/c")


def test_a_class_that_is_no_class_is_a_validation_error():
    with pytest.raises(ValidationError) as caught:
        compile_glob("[z-a].txt")
    assert caught.value.data["reason"] == "invalid_glob"
    assert compile_glob("[!]]").fullmatch("a") and not compile_glob("[!]]").fullmatch("]")
