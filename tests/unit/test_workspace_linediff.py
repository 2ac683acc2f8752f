"""Line matching for the diff (infra.workspace.linediff): correct on any input, and
bounded in time."""

import difflib
import random

import pytest

from cleveragents.infra.workspace import linediff
from cleveragents.infra.workspace.linediff import grouped, match_lines, opcodes


def edited(rng: random.Random, size: int, alphabet: int, edits: int) -> tuple[list[str], list[str]]:
    lines = [f"l{rng.randrange(alphabet)}" for _ in range(size)]
    new = list(lines)
    for _ in range(edits):
        at, roll = rng.randint(0, len(new)), rng.random()
        if roll < 0.4:
            new.insert(at, f"l{rng.randrange(alphabet)}")
        elif new and roll < 0.8:
            del new[min(at, len(new) - 1)]
        elif new:
            new[min(at, len(new) - 1)] = f"l{rng.randrange(alphabet)}"
    return lines, new


def assert_valid(old: list[str], new: list[str]) -> linediff.LineMatch:
    """The blocks are equal runs in order, and the opcodes turn ``old`` into ``new``."""
    match = match_lines(old, new)
    i = j = 0
    for ai, bj, size in match.blocks:
        assert ai >= i and bj >= j and old[ai:ai + size] == new[bj:bj + size]
        i, j = ai + size, bj + size
    assert match.blocks[-1] == (len(old), len(new), 0)
    rebuilt = []
    for tag, i1, i2, j1, j2 in opcodes(match.blocks):
        rebuilt += old[i1:i2] if tag == "equal" else new[j1:j2]
    assert rebuilt == new
    return match


@pytest.mark.parametrize("alphabet", [2, 5, 50, 1000])
def test_any_edit_gives_a_correct_script(alphabet):
    rng = random.Random(alphabet)
    for _ in range(150):
        assert_valid(*edited(rng, rng.randint(0, 60), alphabet, rng.randint(0, 8)))


def test_a_starved_budget_still_gives_a_correct_script(monkeypatch):
    monkeypatch.setattr(linediff, "WORK_BASE", 0)
    monkeypatch.setattr(linediff, "WORK_PER_LINE", 1)
    rng = random.Random(3)
    results = [assert_valid(*edited(rng, rng.randint(20, 200), 4, 30)).complete for _ in range(100)]
    assert not all(results)  # the budget ran out, and the answers were still right


def test_small_edits_are_found_exactly():
    old = [f"line {n}" for n in range(1000)]
    new = old[:10] + ["inserted"] + old[10:500] + old[501:]
    match = assert_valid(old, new)
    assert match.complete and [code[0] for code in opcodes(match.blocks)] == [
        "equal", "insert", "equal", "delete", "equal"]


def test_grouping_matches_difflib_for_the_same_blocks():
    rng = random.Random(11)
    for _ in range(100):
        old, new = edited(rng, 80, 6, 6)
        blocks = match_lines(old, new).blocks
        reference = difflib.SequenceMatcher(None, old, new)
        reference.matching_blocks = blocks  # difflib's grouping over our blocks
        assert list(grouped(opcodes(blocks), 3)) == list(reference.get_grouped_opcodes(3))
    assert list(grouped(opcodes(match_lines(["a"], ["a"]).blocks), 3)) == []
    assert list(grouped(opcodes(match_lines([], []).blocks), 3)) == []
