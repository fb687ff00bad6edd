"""Per-caller rate limit in grains per minute, counted in the shared cache.

A fixed one-minute window per caller. The count is taken with an atomic
``incr`` (atomic across processes on Redis) and given back when refused, so a
refused batch costs nothing.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.cache import cache

from fluxsite.conf import flux_setting as S
from grains.errors import RateLimited
from grains.models import Caller


def _key(caller: Caller, clock: float) -> str:
    return f"flux:grains-per-minute:{caller.client}:{caller.role}:{int(clock // 60)}"


@contextmanager
def grains_rate_slot(caller: Caller, count: int) -> Iterator[None]:
    """Take ``count`` grains of the caller's minute for the block; given back if the block fails."""
    clock = time.time()
    grains_rate_take(caller, count, clock=clock)
    try:
        yield
    except BaseException:
        cache.decr(_key(caller, clock), count)
        raise


def grains_rate_take(caller: Caller, count: int, *, clock: float) -> None:
    """Count ``count`` grains for ``caller`` in the minute of ``clock``, or raise RateLimited (nothing counted)."""
    limit = S("MAX_GRAINS_PER_MINUTE")
    key = _key(caller, clock)
    cache.add(key, 0, timeout=120)
    try:
        used = cache.incr(key, count)
    except ValueError:  # expired between add and incr
        cache.add(key, 0, timeout=120)
        used = cache.incr(key, count)
    if used > limit:
        cache.decr(key, count)
        retry_after = max(1, int(60 - clock % 60) + 1)
        raise RateLimited(
            f"{caller} may store {limit} grains per minute (MAX_GRAINS_PER_MINUTE); {used - count} stored in this "
            f"minute, {count} more asked; retry in {retry_after} s",
            details={"limit": limit, "used": used - count, "asked": count, "retry_after": retry_after},
        )
