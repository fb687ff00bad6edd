"""Traces: ids reserved ahead so a retrieval answers before its trace is written; scrubbing and recounting at a
purge."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime

from django.db import DatabaseError, connection, transaction
from django.db.models import Count, F
from django.db.models.functions import Greatest

from core import metrics
from core.conf import flux_setting as S
from core.errors import storage_error
from core.validate import MAX_ID
from grains.models import Caller
from graph.models import Trace, TraceItem

log = logging.getLogger("flux.traces")
SCRUBBED_QUERY = "[removed: this retrieval returned a purged grain]"
ID_BLOCK = 256  # trace ids a process reserves at once (one short write per this many retrievals)
# Traces a process may have queued and not yet written before a retrieval waits for the oldest: retrievals go at
# the writer's pace rather than queue without end (on PostgreSQL at 110 a second the writer fell 5.5 s behind
# in 15 s, and feedback and stores waited behind it).
MAX_UNWRITTEN = 128
ARRIVAL_MARGIN_S = 1.0  # beyond the commit delay, how long a trace another process answered with may take to arrive


def traces_scrub(grain_id: int) -> int:
    """Replace the query of every trace that returned ``grain_id`` (call before the grain is deleted, inside the
    purge's transaction); how many traces were scrubbed."""
    return Trace.objects.filter(items__grain_id=grain_id).exclude(query=SCRUBBED_QUERY).update(query=SCRUBBED_QUERY)


def returned_unrated_drop(grain_id: int, *, now: datetime) -> int:
    """A grain about to be purged takes its trace items with it: the callers it was returned to and that never
    rated it no longer count it as returned (they cannot rate it now, and their feedback compliance would stay
    short for ever), nor does the feedback-compliance signal. Call inside the purge's transaction, before the
    grain is deleted; how many items were unrated."""
    owed = (TraceItem.objects.filter(grain_id=grain_id, feedback__isnull=True)
            .values("trace__caller_id").annotate(items=Count("pk")))
    total = 0
    for row in owed:
        Caller.objects.filter(pk=row["trace__caller_id"]).update(returned=Greatest(F("returned") - row["items"], 0))
        total += row["items"]
    if total:
        metrics.count({"returned": -total}, now=now)
    return total


def _reserve_ids(count: int) -> list[int]:
    """``count`` trace ids taken from the trace table's own id sequence, so that no row inserted without an id
    (by another process, or by a retrieval that writes its trace at once) ever gets one of them."""
    table = Trace._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                           [table, count])
            return [row[0] for row in cursor.fetchall()]
        # SQLite's AUTOINCREMENT keeps the largest id ever given in sqlite_sequence; new rows get more.
        cursor.execute("INSERT INTO sqlite_sequence (name, seq) SELECT %s, COALESCE(MAX(id), 0) FROM graph_trace "
                       "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %s)", [table, table])
        cursor.execute("UPDATE sqlite_sequence SET seq = seq + %s WHERE name = %s RETURNING seq", [count, table])
        top = cursor.fetchone()[0]
        return list(range(top - count + 1, top + 1))


class _TraceIds:
    """This process's reserved trace ids, per database. The next block is asked for while a quarter of this one
    is left, so a retrieval seldom waits for the writer (with several processes, for its turn) to get an id."""

    def __init__(self) -> None:
        self._free: dict[str, list[int]] = {}  # largest first: pop() gives the smallest
        self._coming: dict[str, Future] = {}
        self._lock = threading.Lock()

    def take(self, record: Callable[[Callable[[], list[int]]], Future]) -> int:
        """The next reserved id; ``record`` queues a block's reservation on the writer and returns its future."""
        key = str(connection.settings_dict["NAME"])
        with self._lock:
            free = self._free.setdefault(key, [])
            if len(free) <= ID_BLOCK // 4 and key not in self._coming:
                self._coming[key] = record(lambda: _reserve_ids(ID_BLOCK))
            if not free:  # a block that could not be reserved raises here (and is asked for again next time)
                free.extend(reversed(self._coming.pop(key).result()))
            return free.pop()


class _Pending:
    """Traces queued for writing and not yet written, by id: feedback on one waits for it. ``failing`` says the
    last one could not be written for want of storage (a full or read-only database): retrievals then write their
    trace before answering again, and answer without one while it does not fit, until one does."""

    def __init__(self) -> None:
        self._futures: dict[int, Future] = {}
        self._flush: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self.failing = False

    def add(self, trace_id: int, future: Future, flush: Callable[[], None]) -> None:
        """``future`` is done once the trace is written; ``flush`` has it committed without waiting for others."""
        with self._lock:
            self._futures[trace_id] = future
            self._flush = flush
        future.add_done_callback(lambda done: self._done(trace_id, done))

    def _done(self, trace_id: int, future: Future) -> None:
        with self._lock:
            self._futures.pop(trace_id, None)
        error = future.exception()
        self.failing = isinstance(error, DatabaseError) and storage_error(error) is not None
        if error is not None:
            log.warning("the trace of retrieval %s could not be written (its feedback will find no trace): %s",
                        trace_id, future.exception())

    def wait(self, trace_id: object, timeout: float = 30.0) -> None:
        with self._lock:
            future = self._futures.get(trace_id) if isinstance(trace_id, int) else None
        self._wait([future] if future is not None else [], timeout)

    def wait_below(self, count: int, timeout: float = 30.0) -> None:
        """Wait, while more than ``count`` traces are queued and not written, for the oldest of them."""
        with self._lock:
            excess = len(self._futures) - count
            oldest = [self._futures[k] for k in sorted(self._futures)[:excess]] if excess > 0 else []
        self._wait(oldest, timeout)

    def wait_all(self, timeout: float = 30.0) -> None:
        with self._lock:
            futures = list(self._futures.values())
        self._wait(futures, timeout)

    def _wait(self, futures: list[Future], timeout: float) -> None:
        if futures and self._flush is not None:
            self._flush()
        for future in futures:
            try:
                future.result(timeout)
            except Exception:  # noqa: BLE001 - logged by _done; the caller then finds no trace
                pass


trace_ids = _TraceIds()
pending_traces = _Pending()


def traces_written() -> None:
    """Wait until every trace this process queued so far is written: what reads the counts and access times
    that a retrieval's trace updates (callers, grains) call first, so they are never behind an answer given."""
    pending_traces.wait_all()


def trace_written(trace_id: object) -> None:
    """Wait until the trace ``trace_id`` this process queued for writing is written (at once if it was not
    queued here): what reads a trace right after its retrieval calls first."""
    pending_traces.wait(trace_id)


def trace_arrived(trace_id: object) -> None:
    """As ``trace_written``, and when another process answered with the trace (several REST processes: its id
    given out, its row not there yet) wait for it, at most TRACE_COMMIT_SECONDS + ARRIVAL_MARGIN_S. On a read
    worker only: the writer must never wait for another process's write."""
    trace_written(trace_id)
    if type(trace_id) is not int or not 1 <= trace_id <= MAX_ID or _exists(trace_id) or not _given_out(trace_id):
        return  # not an id (what asked checks it and says so), or no need to wait
    deadline = time.monotonic() + max(S("TRACE_COMMIT_SECONDS"), 0.0) + ARRIVAL_MARGIN_S
    while time.monotonic() < deadline and not _exists(trace_id):
        time.sleep(0.02)


def _exists(trace_id: int) -> bool:
    with connection.cursor() as cursor:  # plain SQL: every feedback asks
        cursor.execute(f"SELECT 1 FROM {Trace._meta.db_table} WHERE id = %s", [trace_id])
        return cursor.fetchone() is not None


def _given_out(trace_id: int) -> bool:
    """Whether the trace table's id sequence has handed out ``trace_id`` (reserved or written)."""
    table = Trace._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'id'))", [table])
        else:
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        row = cursor.fetchone()
    return row is not None and row[0] is not None and trace_id <= row[0]
