"""ids writes ULID text itself (for speed): it must be python-ulid's."""

from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from cleveragents import ids


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_the_text_is_python_ulids(value):
    text = ids.ulid_text(value)
    assert text == str(ULID.from_int(value)) and ULID.from_str(text).bytes == value.to_bytes(16, "big")


def test_ids_sort_in_creation_order():
    made = [ids.new_id() for _ in range(2000)]
    assert made == sorted(made) and len(set(made)) == len(made) and all(ids.is_ulid(m) for m in made)


def test_utc_now_is_the_current_millisecond_in_iso_8601():
    import time
    from datetime import datetime, timezone

    before = ids.format_utc(datetime.now(timezone.utc))
    stamp = ids.utc_now()
    after = ids.format_utc(datetime.now(timezone.utc))
    assert before <= stamp <= after and stamp.endswith("Z") and len(stamp) == 24
    time.sleep(0.002)
    assert ids.utc_now() > stamp  # the text kept for a millisecond is not kept longer
