"""``parse_cost`` bounds what parsing a JSON text takes in memory, from above
(``domain/json_cost.py``), for the shapes that take the most per byte."""

import json
import tracemalloc

import pytest

from cleveragents.domain.json_cost import MAX_PARSE_COST, parse_cost, within_budget

N = 256 * 1024
SHAPES = {
    "empty objects": b"[" + b"{}," * (N // 3) + b"{}]",
    "empty lists": b"[" + b"[]," * (N // 3) + b"[]]",
    "objects of one object": b"[" + b'{"a":{}},' * (N // 9) + b"{}]",
    "floats": b"[" + b"1.5," * (N // 4) + b"1.5]",
    "short strings": b"[" + b'"ab",' * (N // 5) + b'"a"]',
    "distinct strings": b"[" + b",".join(b'"%d"' % i for i in range(N // 8)) + b"]",
    "distinct keys": b"{" + b",".join(b'"k%d":0' % i for i in range(N // 10)) + b"}",
    "large integers": b"[" + b"123456789012345," * (N // 16) + b"1]",
}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_cost_is_at_least_what_parsing_takes(shape):
    text = SHAPES[shape]
    tracemalloc.start()
    try:
        value = json.loads(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del value
    assert parse_cost(text) >= peak, (parse_cost(text), peak)
    assert parse_cost(text) == parse_cost(text.decode())


def test_dense_text_is_over_the_budget_and_long_plain_text_within_it():
    dense = b"[" + b"{}," * (4 * 1024 * 1024) + b"{}]"  # 12 MiB
    code = json.dumps("int main(void) { return f(a, b[1]); }\n" * (12 * 1024 * 1024 // 38))
    assert not within_budget(dense)
    assert within_budget(code) and parse_cost(code) < MAX_PARSE_COST // 4
    assert within_budget("[" + "{}," * 1000 + "{}]")  # short texts are not counted
