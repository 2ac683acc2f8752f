"""Bulky answers are encoded a piece at a time (a2a.bulk_json), to the same bytes as one
call of pydantic's encoder."""

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleveragents.a2a import bulk_json
from cleveragents.a2a.models import A2AResponse

# Integers of at most 64 bits: a longer one counts as one unit but may be longer than
# 24 bytes (to at most the 4,300 digits Python's JSON reads), which costs no time.
LEAVES = (st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**64 - 1)
          | st.floats(allow_nan=True) | st.text(max_size=20))
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=5), inner, max_size=20),
    max_leaves=60)


PIECE_CHARS, PIECE_SIZE = bulk_json.PIECE_CHARS, bulk_json.PIECE_SIZE  # before tiny_pieces changes them


@pytest.fixture(scope="module")
def tiny_pieces():
    # Pieces this small split every string, list and dict the strategy makes.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk_json, "PIECE_CHARS", 3)
        patch.setattr(bulk_json, "PIECE_SIZE", 40)
        yield


@settings(max_examples=500, deadline=None)
@given(value=VALUES)
def test_pieces_give_the_bytes_of_one_call(tiny_pieces, value):
    assert bulk_json.encode(value) == pydantic_core.to_json(value, inf_nan_mode="null")


def test_a_response_in_pieces_is_the_response():
    for response in (A2AResponse(id=1, result={"diff": "é" * 10, "files": [{"hunks": [["+a"] * 3]}]}),
                     A2AResponse(id="x", result=None), A2AResponse(id=None, result=["\ud800"])):
        assert response.json_bytes_in_pieces() == response.json_bytes()


@settings(max_examples=300, deadline=None)
@given(value=VALUES, size=st.integers(min_value=0, max_value=200))
def test_a_value_counted_small_encodes_to_a_bounded_size(value, size):
    # Each counted unit encodes to at most 24 bytes: a float's digits, an escaped character.
    if bulk_json.small(value, size):
        assert len(pydantic_core.to_json(value, inf_nan_mode="null")) <= 24 * (size + 1)


def test_long_text_many_items_and_other_objects_are_not_small():
    assert bulk_json.small({"task": {"id": "t1", "history": [{"text": "hello"}] * 10}})
    assert not bulk_json.small("x" * (bulk_json.SMALL_SIZE + 1))
    assert not bulk_json.small({"files": [0] * (bulk_json.SMALL_SIZE // bulk_json.ITEM_SIZE + 1)})
    half = bulk_json.SMALL_SIZE // 2
    assert not bulk_json.small({"deep": [[["x" * half]], ["y" * half]]})
    assert not bulk_json.small({"model": A2AResponse(id=1, result=None)})  # not plain data: the worker encodes it
    assert not bulk_json.small({1: "a key JSON spells as text"})


def test_a_page_of_nested_items_goes_in_few_bounded_pieces(monkeypatch):
    # What holds the GIL is one call of pydantic's encoder: each is bounded, and items
    # nested a few levels deep go together in runs, not leaf by leaf.
    task = {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
            "history": [{"role": "ROLE_USER", "parts": [{"text": "hello " * 20}]}] * 3}
    value = {"tasks": [task] * 2_000, "diff": "x" * (3 * PIECE_CHARS), "pageSize": 2_000,
             "numbers": list(range(200_000))}
    monkeypatch.setattr(bulk_json, "PIECE_CHARS", PIECE_CHARS)  # as they are, whatever ran before
    monkeypatch.setattr(bulk_json, "PIECE_SIZE", PIECE_SIZE)
    pieces = []
    encode_one = bulk_json._json
    monkeypatch.setattr(bulk_json, "_json", lambda part: pieces.append(encode_one(part)) or pieces[-1])
    assert bulk_json.encode(value) == pydantic_core.to_json(value)
    runs = [piece for piece in pieces if piece.startswith(b'[{"id"')]
    per_task = bulk_json._size(task, 1 << 30) + bulk_json.ITEM_SIZE
    assert 2 <= len(runs) <= 2_000 * per_task // PIECE_SIZE + 2
    assert max(map(len, runs)) <= 24 * (PIECE_SIZE + 1)
    numbers = [piece for piece in pieces if piece.startswith(b"[") and piece[1:2].isdigit()]
    assert len(numbers) >= 2 and max(map(len, numbers)) <= 24 * (PIECE_SIZE + 1)
    assert len(pieces) < 200  # leaf by leaf, it would be tens of thousands
