"""Redis as a part that may be away: whether it answers, and what runs without it. When REDIS_URL is set Redis
holds the Celery broker and the shared cache (request rates, the grains-per-minute count); while it is down the
grain count falls back to the database, request rates are not counted (logged once), maintenance waits (the
worker reconnects by itself), and stores and retrievals go on."""
from __future__ import annotations

import logging
import time

from django.conf import settings

log = logging.getLogger("flux.redis")
_warned_at = 0.0
WARN_EVERY_SECONDS = 60.0


def redis_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a Redis that is down raises (none to catch without REDIS_URL)."""
    if not settings.REDIS_URL:
        return ()
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def redis_down(what: str, exc: BaseException) -> None:
    """Log that Redis is down and what was done without it, at most once a minute."""
    global _warned_at
    if time.monotonic() - _warned_at >= WARN_EVERY_SECONDS:
        _warned_at = time.monotonic()
        log.warning("Redis at REDIS_URL does not answer (%s): %s", exc.__class__.__name__, what)


def redis_health() -> dict:
    """{"configured": bool, "up": bool | None}: a ping with a short timeout (None when not configured)."""
    if not settings.REDIS_URL:
        return {"configured": False, "up": None}
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5).ping()
        return {"configured": True, "up": True}
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        return {"configured": True, "up": False}
