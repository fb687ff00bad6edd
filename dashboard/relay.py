"""Live events for open pages, whichever process caused them.

The persisted activity log is the source of truth: services in daphne, Celery workers and management commands
all write to it. The dashboard process tails it every DASHBOARD_POLL_SECONDS (events with an id above the last
one seen, and those it passed while their transaction was still open: see dashboard.tail) and fans each batch
out to its websockets through the channel layer group ``GROUP``.
One relay runs per process, started by the first websocket that connects. With REDIS_URL set there is none:
every process sends the events it writes through the Redis channel layer (dashboard/publish.py).
"""
from __future__ import annotations

import asyncio
import logging
import time

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from core.conf import flux_setting as S
from dashboard.selectors import events_after, last_event_id
from dashboard.tail import LogTail

GROUP = "flux.activity"
# How long an id passed while its transaction was still open is asked for again: longer than any of our writes.
SETTLE_SECONDS = 120.0
log = logging.getLogger(__name__)
_tasks: dict[int, asyncio.Task] = {}  # one relay per event loop


def relay_ensure() -> None:
    """Start this process's relay if it is not running (and events are not published through Redis)."""
    if settings.REDIS_URL:
        return
    loop = asyncio.get_running_loop()
    task = _tasks.get(id(loop))
    if task is None or task.done():
        _tasks[id(loop)] = loop.create_task(relay_run(), name="flux-activity-relay")


async def relay_run(*, rounds: int | None = None) -> None:
    """Tail the activity log forever (or for ``rounds`` polls), sending each new batch to GROUP."""
    layer = get_channel_layer()
    tail = LogTail(await database_sync_to_async(last_event_id)(), settle_seconds=SETTLE_SECONDS)
    done = 0
    while rounds is None or done < rounds:
        done += 1
        try:
            events = await database_sync_to_async(relay_poll)(tail)
        except Exception:  # a locked or restarting database: try again next round
            log.exception("reading the activity log failed; retrying")
            events = []
        if events:
            await layer.group_send(GROUP, {"type": "activity.events", "events": events})
        if not events or len(events) < 100:
            await asyncio.sleep(S("DASHBOARD_POLL_SECONDS"))


def relay_poll(tail: LogTail) -> list[dict]:
    """The events of the log that ``tail`` has not taken yet: those above its last id, and those below it that
    were not committed when it passed them (PostgreSQL commits ids out of order)."""
    events = events_after(tail.last, late=tail.late())
    fresh = tail.take((e["id"] for e in events), time.monotonic())
    return [e for e in events if e["id"] in fresh]
