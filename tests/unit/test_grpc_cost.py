"""``parse_cost`` bounds what parsing a protobuf message and converting it to ProtoJSON
take in memory, from above (``a2a/grpc_cost.py``), for the shapes that take the most
per byte. upb allocates outside Python's allocator, so each shape is parsed in a fresh
interpreter that reports how far its peak resident memory rose."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("google.protobuf")

from cleveragents.a2a import grpc_cost, grpc_wire  # noqa: E402
from tests.security.test_dense_protobuf import field, varint  # noqa: E402

N = 256 * 1024


def _struct_entry(key: bytes, value: bytes) -> bytes:
    entry = b"\x0a" + varint(len(key)) + key + b"\x12" + varint(len(value)) + value  # key = 1, value = 2
    return b"\x0a" + varint(len(entry)) + entry  # Struct.fields = 1


SHAPES: dict[str, tuple[str, bytes]] = {
    "empty parts": ("Message", field("Message", "parts", b"") * N),
    "parts with an empty text": ("Message", field("Message", "parts", b"\x0a\x00") * N),
    "empty messages in a history": ("Task", field("Task", "history", b"") * N),
    "empty tasks": ("ListTasksResponse", field("ListTasksResponse", "tasks", b"") * N),
    "short strings": ("Message", field("Message", "extensions", b"a") * N),
    "metadata of distinct keys": ("Message", field("Message", "metadata", b"".join(
        _struct_entry(b"%x" % i, b"\x08\x00") for i in range(N // 4)))),
    "metadata of numbers": ("Message", field("Message", "metadata", b"".join(
        _struct_entry(b"%x" % i, b"\x11" + bytes(8)) for i in range(N // 4)))),
    "raw bytes": ("Message", field("Message", "parts", b"\x12" + varint(8 * N) + bytes(8 * N))),
    "long ASCII text": ("Message", field("Message", "parts", b"\x0a" + varint(8 * N) + b"a" * (8 * N))),
    "text made wide by one accent": ("Message", field("Message", "parts", b"\x0a" + varint(8 * N + 2)
                                                      + b"a" * (8 * N) + "\N{LATIN SMALL LETTER C WITH ACUTE}".encode())),
    "text made wide by one emoji": ("Message", field("Message", "parts", b"\x0a" + varint(8 * N + 4)
                                                     + b"a" * (8 * N) + "\N{GRINNING FACE}".encode())),
}

MEASURE = """
import re, sys
from pathlib import Path
from cleveragents.a2a import grpc_wire
name = sys.argv[1]
data = sys.stdin.buffer.read()
cls = grpc_wire.message_class(name)
grpc_wire.to_dict(cls())  # the converter's own first-use cost is not the message's
def peak():
    return int(re.search(r"^VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text(), re.M)[1]) * 1024
Path("/proc/self/clear_refs").write_text("5")
before = peak()
value = grpc_wire.to_dict(cls.FromString(data))
print(peak() - before)
"""


@pytest.mark.parametrize("shape", SHAPES)
def test_the_cost_is_at_least_what_parsing_and_converting_take(shape):
    name, data = SHAPES[shape]
    measured = int(subprocess.run([sys.executable, "-c", MEASURE, name], input=data, capture_output=True,
                                  check=True).stdout)
    cost = grpc_cost.parse_cost(grpc_wire.message_class(name).DESCRIPTOR, data)
    assert measured > len(data), (measured, len(data))  # the shape is parsed, not cached
    assert cost >= measured, (cost, measured)


def test_dense_messages_are_over_the_budget_and_long_text_within_it():
    descriptor = grpc_wire.message_class("Message").DESCRIPTOR
    dense = field("Message", "parts", b"") * (6 * 2**20)  # 12 MiB
    text = grpc_wire.message_class("Message")()
    text.parts.add().text = "int main(void) { return f(a, b[1]); }\n" * (12 * 2**20 // 38)
    assert not grpc_cost.within_budget(descriptor, dense)
    code = text.SerializeToString()
    assert grpc_cost.within_budget(descriptor, code) and grpc_cost.parse_cost(descriptor, code) < grpc_cost.MAX_PARSE_COST // 4
    assert not grpc_cost.walked(len(field("Message", "parts", b"") * 1000))  # short messages are not walked


@pytest.mark.parametrize("data, why", [
    (b"\x0a", "the message ends inside a field"),  # a tag and no value
    (b"\x0a\x05abc", "a field runs past its message"),
    (b"\x0b\x0c", "wire type 3"),  # a group
    (b"\x08" + b"\xff" * 11, "longer than ten bytes"),
])
def test_bytes_that_are_no_message_are_malformed(data, why):
    with pytest.raises(grpc_cost.MalformedMessage, match=why):
        grpc_cost.parse_cost(grpc_wire.message_class("Message").DESCRIPTOR, data)


def test_messages_nested_past_upbs_limit_are_malformed():
    value = b""
    for _ in range(120):  # Value { list_value { values: Value ... } }
        listed = b"\x0a" + varint(len(value)) + value  # ListValue.values = 1
        value = b"\x32" + varint(len(listed)) + listed  # Value.list_value = 6
    data = field("Message", "metadata", _struct_entry(b"k", value))
    with pytest.raises(grpc_cost.MalformedMessage, match="nest more than 100"):
        grpc_cost.parse_cost(grpc_wire.message_class("Message").DESCRIPTOR, data)
