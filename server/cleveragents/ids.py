"""Identifiers and timestamps: every id the server makes is a monotonic ULID."""

from __future__ import annotations

import os
import random
import threading
import time
from datetime import datetime, timedelta, timezone

_RANDOM_BITS = 80
# A ULID is 26 digits of 5 bits (the top two bits zero) in Crockford's base 32,
# written here two digits (10 bits) per lookup.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DIGIT_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_TIME_SHIFTS = tuple(range(40, -1, -10))  # the 48-bit millisecond: 10 digits
_RANDOM_SHIFTS = tuple(range(70, -1, -10))  # the 80 random bits: 16 digits
_RANDOM_MASK = (1 << _RANDOM_BITS) - 1
_lock = threading.Lock()
_last = 0
# Seeded once from the OS. Drawing from os.urandom for every id releases the GIL in a
# syscall, and under load each reacquisition can wait for a busy worker thread.
_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


def new_id() -> str:
    """A ULID string that sorts after every id this process made before it.

    Within one millisecond the random part is incremented instead of redrawn, so ids
    double as cursors: comparing two ids compares their creation order.
    """
    global _last
    with _lock:
        candidate = (time.time_ns() // 1_000_000) << _RANDOM_BITS
        candidate |= _random.getrandbits(_RANDOM_BITS)
        _last = candidate if candidate > _last else _last + 1
        value = _last
    return ulid_text(value)


_time_digits = (-1, "")  # (millisecond, its ten digits): ids made in one share them


def ulid_text(value: int) -> str:
    """``str(ULID.from_int(value))``, in a fraction of the time: a request makes several
    ids. The ten digits of the time change once a millisecond; the sixteen of the
    random part are looked up two at a time."""
    global _time_digits
    millis = value >> _RANDOM_BITS
    cached, digits = _time_digits
    if millis != cached:
        digits = "".join([_DIGIT_PAIRS[(millis >> shift) & 1023] for shift in _TIME_SHIFTS])
        _time_digits = (millis, digits)
    random_part = value & _RANDOM_MASK
    return digits + "".join([_DIGIT_PAIRS[(random_part >> shift) & 1023] for shift in _RANDOM_SHIFTS])


def is_ulid(text: str) -> bool:
    if not isinstance(text, str) or len(text) != 26:
        return False
    from ulid import ULID  # not at import: the stdio server's first answers need the clock only

    try:
        ULID.from_str(text)
    except ValueError:
        return False
    return True


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_stamp = (-1, "")  # (millisecond, its text): under load many calls share a millisecond


def utc_now() -> str:
    """ISO-8601 UTC with millisecond precision and a ``Z`` suffix."""
    global _stamp
    millis = time.time_ns() // 1_000_000
    cached, text = _stamp
    if millis != cached:
        text = format_utc(_EPOCH + timedelta(milliseconds=millis))
        _stamp = (millis, text)
    return text


def format_utc(moment: datetime) -> str:
    """``moment`` in UTC, to the millisecond; ValueError when an offset moves it out of
    years 1 to 9999 (so every parser of a timestamp refuses it as it does bad text)."""
    try:
        return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except OverflowError:
        raise ValueError("the timestamp is out of range in UTC") from None
