"""Live events straight from the process that wrote them, when the channel layer is Redis (REDIS_URL set).

With several REST processes, workers and machines, tailing the activity log from each dashboard is both late
(a poll) and unsafe on PostgreSQL (ids are taken at insert but committed in any order, so a tail by id can step
over an event committed late). Here each process sends what it wrote itself, once committed: the ids go to a
thread of the process, which describes them as the dashboard's pages need and sends them to the group every
dashboard's websockets join, through channels-redis on one event loop of its own. The activity log stays the
record a page reconnecting with ``after`` reads back from.
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import queue
import threading

from django.db import close_old_connections, transaction

from dashboard.relay import GROUP
from grains.models import ActivityEvent

log = logging.getLogger(__name__)
FLUSH_SECONDS = 2.0  # at exit, how long to wait for what is queued to be sent
_queue: queue.Queue[list[int] | None] = queue.Queue()
_thread: threading.Thread | None = None
_lock = threading.Lock()
_flushed: list[threading.Event] = []  # set once what was queued before them is sent


def publish_soon(ids: list[int]) -> None:
    """Send the events ``ids`` to the dashboards once the transaction that wrote them commits."""
    if ids:
        transaction.on_commit(lambda: _put(ids))


def _put(ids: list[int]) -> None:
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="flux-activity-publish", daemon=True)
            _thread.start()
    _queue.put(ids)


def publish_flush(timeout: float = FLUSH_SECONDS) -> None:
    """Wait (at most ``timeout``) until what is queued has been sent."""
    if _thread is None or not _thread.is_alive():
        return
    done = threading.Event()
    _flushed.append(done)
    _queue.put(None)
    done.wait(timeout)


atexit.register(publish_flush)  # nothing to wait for unless the thread runs


def _run() -> None:
    from channels.layers import get_channel_layer

    from dashboard.selectors import events_describe

    loop = asyncio.new_event_loop()
    layer = get_channel_layer()
    while True:
        batch = [_queue.get()]
        while not _queue.empty() and len(batch) < 100:
            batch.append(_queue.get_nowait())
        ids = sorted({i for part in batch if part for i in part})
        try:
            if ids:
                close_old_connections()
                events = events_describe(list(ActivityEvent.objects.filter(pk__in=ids).order_by("id")))
                loop.run_until_complete(layer.group_send(GROUP, {"type": "activity.events", "events": events}))
        except Exception as exc:  # noqa: BLE001 - Redis or the database away: pages read the log when they reconnect
            log.warning("sending %d activity events to the dashboards failed (%s: %s); open pages get them when "
                        "they reconnect", len(ids), type(exc).__name__, exc)
        if None in batch:
            while _flushed:
                _flushed.pop().set()
