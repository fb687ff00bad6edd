"""Rate-limit tests without clock luck: a burst counts in one window only if the window it started in is still
the window when it ended; otherwise it is run again (with a fresh client, so the first try's counts do not
carry over). Bounded: three bursts in a row crossing a window is a failure."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def clock_minute(attempt: int) -> int:
    """The window of the grains-per-minute counter: the clock minute (whoever counts)."""
    return int(time.time() // 60)


def ratelimit_window(key: Callable[[int], str], seconds: int = 60) -> Callable[[int], int]:
    """The window django-ratelimit counts an attempt's ``key(attempt)`` in (its own function: the window is
    offset per key)."""
    from django_ratelimit.core import _get_window

    return lambda attempt: _get_window(key(attempt), seconds)


def in_one_window(burst: Callable[[int], T], window: Callable[[int], int], tries: int = 3) -> T:
    """``burst(attempt)``'s result, from an attempt that began and ended in the same ``window(attempt)``."""
    for attempt in range(tries):
        began = window(attempt)
        result = burst(attempt)
        if window(attempt) == began:
            return result
    raise AssertionError(f"{tries} bursts in a row crossed a rate window")
