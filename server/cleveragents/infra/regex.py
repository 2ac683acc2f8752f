"""Patterns from input (a user, a model, an action's arguments): RE2, which matches in
time linear in the text.

Every regular expression that comes from input is compiled here: ``fs.search``,
``fs.replace`` and the globs (``infra/workspace/globs.py``). Python's ``re``
backtracks, so ``(.|.)*QQQ`` against one 60-character line runs for longer than anyone
waits, and it holds the GIL all along: no other thread, the event loop's included,
runs meanwhile. RE2 (google-re2) never backtracks, and it lets go of the GIL while it
matches.

The syntax is RE2's: Python's, less what needs backtracking. A pattern using such a
construct (a backreference, a lookaround, an atomic group, a possessive quantifier, a
conditional) is refused with a ``PatternError`` that names it. ``\\w``, ``\\d``,
``\\s``, ``\\b`` and ``[[:alpha:]]`` are ASCII; ``\\pL`` and ``\\p{Greek}`` name
Unicode classes. Texts are matched as UTF-8 bytes, so positions are byte offsets.

A replacement is Python's ``re.sub`` template (``\\1``, ``\\g<1>``, ``\\g<name>``,
``\\n``, ...), parsed by ``Template`` with Python's rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import re2
from re2 import _re2

MAX_PATTERN_CHARS = 20_000
MAX_REPEAT = 1000  # RE2's largest {n}

_OPERATORS = {  # RE2's "invalid perl operator: <fragment>", for what Python has and RE2 lacks
    "(?=": "lookahead", "(?!": "lookahead", "(?<=": "lookbehind", "(?<!": "lookbehind",
    "(?>": "atomic group", "(?(": "conditional", "(?#": "comment group", "(?|": "branch reset group",
    "(?R": "recursion", "(?P=": "backreference", "(?P>": "recursion",
}
_UNANCHORED, _ANCHOR_BOTH = _re2.RE2.Anchor.UNANCHORED, _re2.RE2.Anchor.ANCHOR_BOTH
_ESCAPES = {"\\a": 7, "\\b": 8, "\\f": 12, "\\n": 10, "\\r": 13, "\\t": 9, "\\v": 11, "\\\\": 92}
_OCTAL = "01234567"


class PatternError(ValueError):
    """A pattern or a replacement that can't be used. ``construct`` names what RE2
    lacks (``backreference``, ``lookahead``, ...) when that is the reason."""

    def __init__(self, message: str, construct: str | None = None):
        super().__init__(message)
        self.construct = construct


class Pattern:
    """A compiled pattern, matched against bytes. A match is the list of its groups'
    ``(start, end)`` byte spans, group 0 first; ``(-1, -1)`` for a group that did not
    take part."""

    __slots__ = ("source", "groups", "groupindex", "_match")

    def __init__(self, source: str, regexp: Any):
        self.source = source
        self._match = regexp.Match
        self.groups: int = regexp.NumberOfCapturingGroups()
        self.groupindex: dict[str, int] = {name.decode("utf-8"): index for name, index in regexp.NamedCapturingGroups()}

    def fullmatch(self, text: str | bytes) -> bool:
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
        return bool(self._match(_ANCHOR_BOTH, data, 0, len(data))[0][0] >= 0)

    def finditer(self, data: bytes, endpos: int | None = None) -> Iterator[list[tuple[int, int]]]:
        """The matches left to right, none overlapping; after an empty match the search
        goes on at the next character, as Python's does."""
        end = len(data) if endpos is None else endpos
        pos, match = 0, self._match
        while pos <= end:
            spans = match(_UNANCHORED, data, pos, end)
            start, stop = spans[0]
            if start < 0:
                return
            yield spans
            pos = stop if stop > start else _next_character(data, stop)

    def subn(self, template: Template, data: bytes, count: int = 0,
             check: Callable[[], None] | None = None) -> tuple[bytes, int]:
        """``data`` with at most ``count`` matches (0: all) replaced, and how many were.
        ``check`` is called between matches (a deadline, a cancel)."""
        pieces: list[bytes] = []
        done = last = 0
        for spans in self.finditer(data):
            if check is not None:
                check()
            start, stop = spans[0]
            pieces.append(data[last:start])
            pieces.append(template.expand(data, spans))
            last, done = stop, done + 1
            if done == count:
                break
        if not done:
            return data, 0
        pieces.append(data[last:])
        return b"".join(pieces), done


def compile_pattern(source: str, *, ignore_case: bool = False, multiline: bool = False, dotall: bool = False,
                    lines: bool = False) -> Pattern:
    """``source`` compiled, or ``PatternError``. ``lines``: no match spans a line end
    (``\\n`` never matches) and ``^``/``$`` match at each line's start and end."""
    if len(source) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.log_errors = False  # RE2 would write each refusal to stderr
    options.case_sensitive = not ignore_case
    options.dot_nl = dotall
    options.never_nl = lines
    options.never_capture = lines  # a line search needs no groups, and is quicker without
    prefix = "(?m)" if multiline or lines else ""
    # The binding itself, not the module's re-like wrapper: that one keeps its last 128
    # patterns (and their DFAs, up to 8 MiB each) alive, and costs a generator and a
    # match object per match, a third of a search with many matches.
    regexp = _re2.RE2(_utf8(prefix + source, "pattern"), options)
    if not regexp.ok():
        raise _explain(_text(regexp.error()), source)
    return Pattern(source, regexp)


def _text(message: bytes | str) -> str:
    return message.decode("utf-8", "replace") if isinstance(message, bytes) else message


def _explain(error: str, source: str) -> PatternError:
    """RE2's refusal (``"invalid perl operator: (?="``) as a message naming the construct."""
    kind, _, fragment = error.partition(": ")
    construct, hint = None, ""
    if kind == "invalid perl operator":
        if fragment == "(?P":  # RE2 has (?P<name>...); which other (?P it met, the pattern says
            at = source.find("(?P")
            while at != -1 and source[at + 3:at + 4] == "<":
                at = source.find("(?P", at + 1)
            fragment = source[at:at + 4] if at != -1 else fragment
        construct = _OPERATORS.get(fragment) or _OPERATORS.get(fragment[:3]) or "inline flag"
    elif kind == "invalid escape sequence":
        construct = "backreference" if re.fullmatch(r"\\[1-9k]", fragment) else "escape"
        if fragment == "\\Z":
            construct, hint = "\\Z", "; RE2 writes the end of the text as \\z"
    elif kind == "bad repetition operator" and len(fragment) > 1 and fragment.endswith("+"):
        construct = "possessive quantifier"
    elif kind == "invalid repetition size":
        error = f"the repetition {fragment} is over {MAX_REPEAT}"
    elif kind.startswith("pattern too large"):
        error = "it is too large to compile"
    if construct is None:
        shown = source if len(source) <= 200 else source[:200] + "..."
        return PatternError(f"invalid regular expression {shown!r}: {error}")
    what = fragment if construct == fragment else f"{fragment} ({construct})"
    return PatternError(f"{what} is not supported: patterns use RE2 syntax, which never backtracks{hint}",
                        construct)


@dataclass(frozen=True, slots=True)
class LineMatch:
    line: int  # 1-based
    column: int  # 1-based, in characters
    text: str  # the line without its ending, cut at ``max_text`` characters


def search_lines(pattern: Pattern, data: bytes, max_text: int,
                 check: Callable[[], None] | None = None) -> Iterator[LineMatch]:
    """The matches of a ``lines`` pattern in a text file's bytes, left to right. A line
    ends at ``\\n`` and leaves out its ending (``\\r`` before it too), as
    ``workspace.text.split_lines`` cuts lines; one RE2 search runs over the whole file,
    so the GIL is free while it looks. Line numbers and columns are counted as the
    matches go, so a giant line with many matches costs its length, once."""
    if not data:  # no line at all
        return
    last_ends = data.endswith(b"\n")  # then the last line ends before that newline
    if b"\r" in data:  # "a\r\n" is the line "a": `a$` matches it
        data = b"\n".join([line.rstrip(b"\r") for line in data.split(b"\n")])
    end = len(data) - 1 if last_ends else len(data)
    ascii = data.isascii()  # then a column is a count of bytes
    line, counted, line_start, column, column_at, text = 1, 0, 0, 1, 0, None
    for spans in pattern.finditer(data, end):
        if check is not None:
            check()
        start = spans[0][0]
        if newlines := data.count(b"\n", counted, start):
            line += newlines
            line_start = data.rfind(b"\n", counted, start) + 1
            column, column_at, text = 1, line_start, None
        counted = start
        column += start - column_at if ascii else len(data[column_at:start].decode("utf-8"))
        column_at = start
        if text is None:
            stop = data.find(b"\n", start, end)
            stop = min(end if stop == -1 else stop, line_start + 4 * max_text)
            text = data[line_start:stop].decode("utf-8", "ignore")[:max_text]  # "ignore": a character cut at the end
        yield LineMatch(line, column, text)


def _next_character(data: bytes, pos: int) -> int:
    """The start of the UTF-8 character after the one at ``pos``."""
    pos += 1
    while pos < len(data) and data[pos] & 0xC0 == 0x80:
        pos += 1
    return pos


class Template:
    """A replacement in Python's ``re.sub`` syntax, parsed once with Python's rules:
    ``\\1`` to ``\\99`` and ``\\g<n>``/``\\g<name>`` insert a group (nothing when it
    did not match), ``\\0`` and three-digit octals a character, ``\\n``, ``\\t`` and the
    like their character; any other escape of an ASCII letter is an error, and any
    other escape stays as written."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[bytes | int]):
        self.pieces = pieces

    @classmethod
    def parse(cls, template: str, pattern: Pattern) -> Template:
        pieces: list[bytes | int] = []
        literal: list[str] = []

        def group(index: int) -> None:
            if index > pattern.groups:
                raise PatternError(f"invalid group reference {index} in the replacement "
                                   f"(the pattern has {pattern.groups} groups)")
            pieces.append(_utf8("".join(literal), "replacement"))
            literal.clear()
            pieces.append(index)

        i, n = 0, len(template)
        while i < n:
            char = template[i]
            if char != "\\":
                literal.append(char)
                i += 1
                continue
            if i + 1 == n:
                raise PatternError("bad escape (end of the replacement)")
            code = template[i + 1]
            if code == "g":
                close = template.find(">", i + 3)
                if template[i + 2:i + 3] != "<" or close == -1:
                    raise PatternError("missing <group> after \\g in the replacement")
                name = template[i + 3:close]
                if name.isidentifier():
                    if name not in pattern.groupindex:
                        raise PatternError(f"unknown group name {name!r} in the replacement")
                    group(pattern.groupindex[name])
                elif name.isascii() and name.isdigit():
                    group(int(name))
                else:
                    raise PatternError(f"bad character in group name {name!r} in the replacement")
                i = close + 1
            elif code == "0":
                digits = _take(template, i + 2, _OCTAL, 2)
                literal.append(chr(int("0" + digits, 8)))
                i += 2 + len(digits)
            elif code.isascii() and code.isdigit():
                digits = code + _take(template, i + 2, "0123456789", 1)
                if len(digits) == 2 and digits[0] in _OCTAL and digits[1] in _OCTAL and \
                        _take(template, i + 3, _OCTAL, 1):
                    value = int(digits + template[i + 3], 8)
                    if value > 0o377:
                        raise PatternError(f"octal escape \\{digits}{template[i + 3]} is over \\377")
                    literal.append(chr(value))
                    i += 4
                else:
                    group(int(digits))
                    i += 1 + len(digits)
            elif (escape := template[i:i + 2]) in _ESCAPES:
                literal.append(chr(_ESCAPES[escape]))
                i += 2
            elif code.isascii() and code.isalpha():
                raise PatternError(f"bad escape \\{code} in the replacement")
            else:
                literal.append(template[i:i + 2])
                i += 2
        pieces.append(_utf8("".join(literal), "replacement"))
        return cls(pieces)

    def expand(self, data: bytes, spans: list[tuple[int, int]]) -> bytes:
        if len(self.pieces) == 1:
            return self.pieces[0]  # type: ignore[return-value]
        out = []
        for piece in self.pieces:
            if isinstance(piece, int):
                start, stop = spans[piece]
                if start >= 0:
                    out.append(data[start:stop])
            else:
                out.append(piece)
        return b"".join(out)


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON can carry
        raise PatternError(f"the {what} is not valid Unicode (it holds a lone surrogate)") from None


def _take(text: str, start: int, allowed: str, most: int) -> str:
    end = start
    while end < len(text) and end - start < most and text[end] in allowed:
        end += 1
    return text[start:end]
