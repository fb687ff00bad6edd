"""The booth: concurrent reads, one serial write queue with a depth cap.

Django runs sync views under ASGI in one shared thread, so reads would queue
behind each other and behind writes. The booth runs each view on its own
executors instead: reads on READ_WORKERS threads, writes on a single thread
(SQLite has one writer anyway; serialising in-process avoids lock waits).
Accepted feedback is applied on the write thread, in order, after the reply.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from django.db import close_old_connections

from fluxsite.conf import flux_setting as S
from grains.errors import Overloaded

T = TypeVar("T")


class Booth:
    def __init__(self, read_workers: int) -> None:
        self._reads = ThreadPoolExecutor(read_workers, thread_name_prefix="flux-read")
        self._writes = ThreadPoolExecutor(1, thread_name_prefix="flux-write")
        self._lock = threading.Lock()
        self._depth = 0
        self._feedback_queued = False

    @property
    def write_depth(self) -> int:
        """Writes queued or running."""
        return self._depth

    def read(self, fn: Callable[[], T]) -> Future[T]:
        return self._reads.submit(_with_connections, fn)

    def write(self, fn: Callable[[], T]) -> Future[T]:
        """Queue a write; Overloaded when MAX_WRITE_QUEUE_DEPTH writes already wait."""
        cap = S("MAX_WRITE_QUEUE_DEPTH")
        with self._lock:
            if self._depth >= cap:
                raise Overloaded(
                    f"the write queue is full ({cap} writes waiting, MAX_WRITE_QUEUE_DEPTH); retry shortly",
                    details={"retry_after": 1, "depth": self._depth},
                )
            self._depth += 1
        return self._writes.submit(self._run_write, fn)

    def apply_feedback_soon(self) -> None:
        """Queue one job that applies all pending feedback, unless one is already waiting.

        When the queue is full the feedback stays pending (it is durable) and is
        applied by the next such job.
        """
        from graph.services import feedback_apply_pending

        with self._lock:
            if self._feedback_queued:
                return
            self._feedback_queued = True

        def job() -> int:
            with self._lock:
                self._feedback_queued = False
            return feedback_apply_pending()

        try:
            self.write(job)
        except Overloaded:
            with self._lock:
                self._feedback_queued = False

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every write queued so far has run."""
        self._writes.submit(lambda: None).result(timeout)

    def _run_write(self, fn: Callable[[], T]) -> T:
        try:
            return _with_connections(fn)
        finally:
            with self._lock:
                self._depth -= 1


def _with_connections(fn: Callable[[], T]) -> T:
    close_old_connections()
    try:
        return fn()
    finally:
        close_old_connections()


_booth: Booth | None = None
_booth_lock = threading.Lock()


def get_booth() -> Booth:
    """The process's booth, created on first use."""
    global _booth
    with _booth_lock:
        if _booth is None:
            _booth = Booth(S("READ_WORKERS"))
        return _booth
