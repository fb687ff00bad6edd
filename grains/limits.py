"""Per-client rate limit in grains per minute.

A fixed one-minute window per client (every role of a client shares it). With
Redis the count is the shared cache's atomic ``incr``, given back when the store
fails; without Redis (or while it is down) it is a row of the database, taken
inside the store's own transaction, so it is atomic across processes and a
failed store gives it back by rolling back.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from core.conf import flux_setting as S
from core.errors import RateLimited
from core.redis_state import redis_down, redis_errors
from grains.callers import caller_identity
from grains.models import Caller, RateCount

WINDOW_SECONDS = 60


def _key(client: str) -> str:
    return f"grains-per-minute:{client}"


def _window(clock: float) -> int:
    return int(clock // WINDOW_SECONDS)


def _refused(client: str, used: int, count: int, clock: float) -> RateLimited:
    limit = S("MAX_GRAINS_PER_MINUTE")
    retry_after = max(1, int(WINDOW_SECONDS - clock % WINDOW_SECONDS) + 1)
    return RateLimited(
        f"client {client!r} may store {limit} grains per minute (MAX_GRAINS_PER_MINUTE); {used} stored in this "
        f"minute, {count} more asked; retry in {retry_after} s",
        details={"limit": limit, "used": used, "asked": count, "retry_after": retry_after},
    )


def _used(client: str, clock: float) -> int:
    if settings.REDIS_URL:
        try:
            return int(cache.get(f"flux:{_key(client)}:{_window(clock)}", 0))
        except redis_errors() as exc:
            redis_down("grains per minute counted in the database meanwhile", exc)
    row = RateCount.objects.filter(name=_key(client), slot=_window(clock)).values_list("used", flat=True).first()
    return row or 0


def grains_rate_check(caller: str | tuple[str, str] | Caller | None, count: int) -> None:
    """Read only: RateLimited if ``count`` more grains would exceed the client's minute now (taken later)."""
    client, clock = caller_identity(caller)[0], time.time()
    used = _used(client, clock)
    if used + count > S("MAX_GRAINS_PER_MINUTE"):
        raise _refused(client, used, count, clock)


@contextmanager
def grains_rate_slot(caller: Caller, count: int) -> Iterator[None]:
    """Take ``count`` grains of the client's minute for the block, or raise RateLimited (nothing taken).

    Call it inside the store's transaction: without Redis the count is written there and rolled back with it;
    with Redis it is given back when the block raises.
    """
    clock = time.time()
    key = f"flux:{_key(caller.client)}:{_window(clock)}"
    try:
        used = _take_in_redis(key, count) if settings.REDIS_URL else None
    except redis_errors() as exc:  # Redis away: the database counts, as without Redis
        redis_down("grains per minute counted in the database meanwhile", exc)
        used = None
    if used is None:
        _take_in_database(caller.client, count, clock)
        yield
        return
    if used > S("MAX_GRAINS_PER_MINUTE"):
        _give_back(key, count)
        raise _refused(caller.client, used - count, count, clock)
    try:
        yield
    except BaseException:
        _give_back(key, count)
        raise


def _give_back(key: str, count: int) -> None:
    try:
        cache.decr(key, count)
    except redis_errors() as exc:  # gone since the count was taken: the minute keeps it
        redis_down("a refused store's grains not given back to the minute", exc)


def _take_in_redis(key: str, count: int) -> int:
    cache.add(key, 0, timeout=2 * WINDOW_SECONDS)
    try:
        return cache.incr(key, count)
    except ValueError:  # expired between add and incr
        cache.add(key, 0, timeout=2 * WINDOW_SECONDS)
        return cache.incr(key, count)


def _take_in_database(client: str, count: int, clock: float) -> None:
    """One atomic upsert (SQLite >= 3.35 and PostgreSQL): the new total, checked, in the caller's transaction."""
    slot, table = _window(clock), RateCount._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE slot < %s", [slot - 1])
        cursor.execute(f"INSERT INTO {table} (name, slot, used) VALUES (%s, %s, %s) "
                       f"ON CONFLICT (name, slot) DO UPDATE SET used = {table}.used + excluded.used RETURNING used",
                       [_key(client), slot, count])
        used = cursor.fetchone()[0]
    if used > S("MAX_GRAINS_PER_MINUTE"):
        raise _refused(client, used - count, count, clock)  # the caller's transaction rolls the count back
