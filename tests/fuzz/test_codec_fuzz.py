"""Both A2A codecs' decoders on arbitrary JSON: a decoded value or our
ValidationError (naming the field), never any other exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleveragents.a2a.codecs import get_codec
from cleveragents.domain.errors import ValidationError
from tests.fuzz.strategies import SCALE, WIRE_KEYS, json_values, mutated
from tests.unit.test_codecs import ANY_VALUE, encode

CODECS = [get_codec("1.0"), get_codec("0.3")]
DECODERS = sorted(name for name in dir(CODECS[0]) if name.startswith("decode_"))
wire_objects = st.dictionaries(st.sampled_from(WIRE_KEYS) | st.text(max_size=8), json_values, max_size=6)


def decode(codec: Any, name: str, value: Any) -> None:
    try:
        getattr(codec, name)(value)
    except ValidationError as exc:
        assert exc.message and isinstance(exc.data, dict)
        json.dumps(exc.data)  # it goes on the wire as the error's data


def test_both_codecs_have_the_same_decoders():
    assert DECODERS == sorted(name for name in dir(CODECS[1]) if name.startswith("decode_"))
    assert len(DECODERS) >= 10


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.version)
@pytest.mark.parametrize("name", DECODERS)
@settings(max_examples=25 * SCALE, deadline=None, database=None)
@given(value=json_values | wire_objects)
def test_arbitrary_json_decodes_or_is_refused(codec, name, value):
    decode(codec, name, value)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.version)
@settings(max_examples=80 * SCALE, deadline=None, database=None)
@given(data=st.data(), pair=ANY_VALUE, through=st.sampled_from(CODECS))
def test_mutated_wire_values_decode_or_are_refused(codec, data, pair, through):
    kind, value = pair
    wire = data.draw(mutated(encode(through, kind, value), list(WIRE_KEYS)))
    for name in DECODERS:
        decode(codec, name, wire)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.version)
@settings(max_examples=40 * SCALE, deadline=None, database=None)
@given(value=json_values, task_id_required=st.booleans())
def test_push_configs_without_a_task_id(codec, value, task_id_required):
    try:
        codec.decode_push_config(value, task_id_required)
    except ValidationError:
        pass
