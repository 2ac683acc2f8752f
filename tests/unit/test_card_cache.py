"""How long the outbound client keeps an agent card (``a2a/card_cache.py``)."""

import pytest

from cleveragents.a2a.card_cache import MAX_AGE, CardCache, max_age


@pytest.mark.parametrize(("header", "seconds"), [
    ("public, max-age=300", 300.0), ("max-age=0", 0.0), ('private, max-age="60"', 60.0),
    ("Max-Age=30, public", 30.0), ("max-age=999999", MAX_AGE),
    ("no-store, max-age=300", 0.0), ("no-cache", 0.0), ("public", 0.0), ("max-age=-5", 0.0),
    ("max-age=1e9", 0.0), ("max-age=", 0.0), ("", 0.0), (None, 0.0)])
def test_a_card_is_kept_as_long_as_its_cache_control_allows_at_most_an_hour(header, seconds):
    assert max_age(header) == seconds


def test_a_card_is_served_while_fresh_then_dropped():
    now = [100.0]
    cache = CardCache(clock=lambda: now[0])
    cache.put("http://a", {"name": "a"}, "http://a/card.json", 30)
    cache.put("http://b", {"name": "b"}, "http://b/card.json", 0)  # may not be kept
    assert cache.get("http://a") == ({"name": "a"}, "http://a/card.json")
    assert cache.get("http://b") is None
    now[0] = 130.0
    assert cache.get("http://a") is None


def test_the_cache_keeps_the_most_recently_used_cards_up_to_its_size():
    cache = CardCache(size=2)
    for name in "abc":
        cache.put(name, {"name": name}, name, 60)
        if name == "b":
            assert cache.get("a") is not None  # "a" is now the most recently used
    assert [name for name in "abc" if cache.get(name) is not None] == ["a", "c"]
    cache.drop("a")
    assert cache.get("a") is None
