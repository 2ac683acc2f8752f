"""The limits on a request's params and on stored records (domain/json_limits.py)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

from cleveragents.config import Settings
from cleveragents.container.configured import configuration_problem
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.json_limits import MAX_DEPTH, MAX_METADATA_SIZE, JsonLimits, first_too_deep

LIMITS = JsonLimits()


def nest(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def refusal(params: dict[str, Any], limits: JsonLimits = LIMITS) -> dict[str, Any]:
    with pytest.raises(ValidationError) as caught:
        limits.check_params(params, "SendMessage")
    assert caught.value.data["method"] == "SendMessage"
    [error] = caught.value.data["errors"]
    return error


def test_params_nest_at_most_the_limit_counting_params_as_level_one():
    LIMITS.check_params(nest(MAX_DEPTH))  # params and 63 objects in it: the innermost is at level 64
    error = refusal(nest(MAX_DEPTH + 1))
    assert error["loc"] == ["a"] * MAX_DEPTH and error["type"] == "too_deep" and error["limit"] == MAX_DEPTH
    assert f"deeper than {MAX_DEPTH} levels" in error["msg"]


def test_arrays_empty_containers_and_other_sequences_count_as_levels():
    deep_list: Any = []
    for _ in range(MAX_DEPTH):
        deep_list = [deep_list]
    assert refusal({"x": deep_list})["loc"] == ["x", *[0] * (MAX_DEPTH - 1)]  # the 64th list is at level 65
    LIMITS.check_params({"x": nest(MAX_DEPTH - 2, leaf={})})
    assert refusal({"x": nest(MAX_DEPTH - 1, leaf={})})["type"] == "too_deep"
    assert refusal({"x": nest(MAX_DEPTH - 1, leaf=())})["type"] == "too_deep"
    assert refusal(OrderedDict(x=nest(MAX_DEPTH - 1, leaf=OrderedDict(b=1))))["type"] == "too_deep"
    LIMITS.check_params({"x": nest(MAX_DEPTH - 1, leaf="a long string is not a level " * 10)})


def test_the_first_value_past_the_limit_is_named_among_siblings():
    params = {"message": {"parts": [{"text": "a"}, {"data": nest(MAX_DEPTH)}], "metadata": {}}}
    error = refusal(params)
    assert error["loc"][:4] == ["message", "parts", 1, "data"]


def test_a_metadata_object_is_measured_in_bytes_of_compact_json():
    def of_size(size: int) -> dict[str, Any]:
        overhead = len('{"k":""}')
        return {"k": "x" * (size - overhead)}

    LIMITS.check_params({"message": {"metadata": of_size(MAX_METADATA_SIZE)}})
    error = refusal({"message": {"metadata": of_size(MAX_METADATA_SIZE + 1)}})
    assert error["loc"] == ["message", "metadata"] and error["type"] == "too_large"
    # Three bytes each in UTF-8: a third as many characters already fill it.
    error = refusal({"message": {"parts": [{"metadata": {"k": "€" * (MAX_METADATA_SIZE // 3)}}]}})
    assert error["loc"] == ["message", "parts", 0, "metadata"]
    # A metadata object inside another is measured with it, once.
    LIMITS.check_params({"metadata": {"metadata": of_size(MAX_METADATA_SIZE - 100)}})
    # Data is not metadata: its size is the message's business.
    LIMITS.check_params({"message": {"parts": [{"data": {"k": "x" * (2 * MAX_METADATA_SIZE)}}]}})


def test_limits_can_be_set_within_bounds():
    small = JsonLimits(max_depth=8, max_metadata_size=1024)
    small.check_params({"m": nest(7)})
    assert refusal({"m": nest(8)}, small)["loc"] == ["m", *["a"] * 7]
    assert refusal({"metadata": {"k": "x" * 1024}}, small)["type"] == "too_large"
    for bad in ({"max_depth": 7}, {"max_depth": 101}, {"max_metadata_size": 1023}, {"max_depth": "64"}):
        with pytest.raises(ValueError):
            JsonLimits(**bad)


def test_first_too_deep_finds_where_a_value_goes_past():
    assert first_too_deep("text", 3) is None
    assert first_too_deep(nest(3), 3) is None
    assert first_too_deep(nest(4), 3) == ["a", "a", "a"]
    assert first_too_deep([[1], [[[2]]]], 3) == [1, 0, 0]


def test_settings_give_the_limits_from_the_environment_and_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLEVERAGENTS_MAX_JSON_DEPTH", "32")
    monkeypatch.setenv("CLEVERAGENTS_MAX_METADATA_SIZE", "4096")
    settings = Settings.from_env(workspace=tmp_path)
    assert (settings.max_json_depth, settings.max_metadata_size) == (32, 4096)
    assert configuration_problem(settings) is None
    monkeypatch.setenv("CLEVERAGENTS_MAX_JSON_DEPTH", "500")
    assert "max_json_depth must be an integer from 8 to 100" in configuration_problem(Settings.from_env(workspace=tmp_path))
    monkeypatch.delenv("CLEVERAGENTS_MAX_JSON_DEPTH")
    monkeypatch.delenv("CLEVERAGENTS_MAX_METADATA_SIZE")
    (tmp_path / ".cleveragents").mkdir()
    (tmp_path / ".cleveragents" / "config.toml").write_text("[defaults]\nmax_metadata_size = 10\n")
    assert "max_metadata_size must be" in configuration_problem(Settings.from_env(workspace=tmp_path))
    (tmp_path / ".cleveragents" / "config.toml").write_text("[defaults]\nmax_json_depth = 16\n")
    from cleveragents.container import Container

    container = Container(Settings.from_env(workspace=tmp_path, memory=True))
    try:
        assert container.json_limits == JsonLimits(16, MAX_METADATA_SIZE)
    finally:
        container.close()


def test_what_the_quick_proof_cannot_settle_is_walked():
    LIMITS.check_params({"text": "{[" * 1000})  # brackets inside strings are no levels
    LIMITS.check_params({"text": "\udc80", "m": nest(10)})  # a lone surrogate: the fast encoder refuses it
    assert refusal({"text": "\udc80", "m": nest(MAX_DEPTH)})["type"] == "too_deep"
    big = {"metadata": {"k": "\udc80" * (MAX_METADATA_SIZE // 3)}}  # three bytes each, as UTF-8 would take
    assert refusal(big)["type"] == "too_large"
    LIMITS.check_params({"metadata": {"k": "\udc80" * (MAX_METADATA_SIZE // 3 - 10)}})


def test_metadata_with_more_brackets_than_levels_left_is_still_judged_by_its_depth():
    spans = {"trace": {"spans": [{"n": n, "tags": {"k": "v"}} for n in range(200)]}}  # 402 brackets, 4 levels
    LIMITS.check_params({"message": {"metadata": spans, "parts": [{"metadata": spans}]}})
    deep_inside = {"trace": {"spans": [*spans["trace"]["spans"], nest(MAX_DEPTH)]}}
    assert refusal({"message": {"metadata": deep_inside}})["loc"][:5] == ["message", "metadata", "trace", "spans", 200]
