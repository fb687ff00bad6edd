"""The booth: concurrent reads, one serial write queue with a depth cap.

Django runs sync views under ASGI in one shared thread, so reads would queue
behind each other and behind writes. The booth runs each view on its own
executors instead: reads on READ_WORKERS threads (a read that waits on
something outside, the LLM of flux_extracts or a clustering of the whole graph,
on OUTSIDE_WORKERS threads of their own, so that reads never queue behind it),
and every database write on one writer thread, so a process's writes never wait
on each other for SQLite's lock. The writer takes jobs from a priority queue: the bookkeeping of reads (a
retrieval's trace, a feedback receipt) goes first, so it waits at most for the
one write in progress; stores, batches and applying feedback follow in arrival
order, at most MAX_WRITE_QUEUE_DEPTH of them.

On SQLite the writers of several REST processes (WEB_WORKERS) take turns on a lock file beside the database
(``Turns``): SQLite's own wait for its write lock sleeps and polls, so under load one process waited up to most
of a second while the other took the lock again and again; a waiter on the file lock is woken as soon as it is
free. Other writers (the worker) wait on SQLite's lock, as before.

The traces of retrievals are committed together, within TRACE_COMMIT_SECONDS of the first: on SQLite every
commit empties the page cache of every reader, so a commit per retrieval made the next one read the index
pages again; on PostgreSQL a transaction per trace kept the writer under 70 retrievals a second, and the
traces of a busy moment piled up behind it. They are also written together (``record_after``: one call of
their writing function for all of them, a few statements in all rather than a few per trace), just before the
commit, before any other job of the batch runs, or once no read is left queued or running (an agent's pause
between two retrievals; under load, traces wait for the commit and are written many at a time). A batch takes
its turn and begins its transaction with its first write, so traces only gathered hold the database for the
milliseconds of writing them, not for the whole window (with two processes the other's writer waited out every
window, and a retrieval waiting for trace ids with it: 1.5-1.9 s). Any other job commits the traces written so
far before it runs, so it never sees them pending.
"""
from __future__ import annotations

import atexit
import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from django.db import DatabaseError, close_old_connections, connection, transaction

from core.conf import flux_setting as S
from core.errors import Overloaded
from core.turns import Turns

T = TypeVar("T")
Item = TypeVar("Item")
AHEAD, BOOKKEEPING, WRITE, STOP = -1, 0, 1, 2
BATCH_MAX = 64  # most traces one commit holds
OUTSIDE_WORKERS = 8  # reads that wait on something outside at once (beyond them, they queue among themselves)
LINGER_S = 0.003  # how long a write nobody waits for lets the answer that asked for it go out first
_held = threading.local()  # on a read worker during a read: the bookkeeping it queues for after it


class Booth:
    def __init__(self, read_workers: int, commit_seconds: float = 0.0, turns: Turns | None = None) -> None:
        self._commit_s = max(commit_seconds, 0.0)
        self._turns = turns or Turns()
        self._reads = ThreadPoolExecutor(read_workers, thread_name_prefix="flux-read")
        self._outside = ThreadPoolExecutor(OUTSIDE_WORKERS, thread_name_prefix="flux-outside")
        self._jobs: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._depth = 0
        self._reading = 0  # reads queued or running
        self._unwritten = False  # items gathered since the last read left: written when the next is over
        self._waiting: set[str] = set()
        self._writer = threading.Thread(target=self._write_loop, name="flux-write", daemon=True)
        self._writer.start()
        atexit.register(self.close)

    @property
    def write_depth(self) -> int:
        """Writes queued or running (bookkeeping not counted)."""
        return self._depth

    def read(self, fn: Callable[[], T]) -> Future[T]:
        return self._submit(self._reads, fn)

    def outside(self, fn: Callable[[], T]) -> Future[T]:
        """A read that waits on something outside (the LLM, a clustering): on threads of its own."""
        return self._submit(self._outside, fn)

    def _submit(self, pool: ThreadPoolExecutor, fn: Callable[[], T]) -> Future[T]:
        with self._lock:
            self._reading += 1
        try:
            future = pool.submit(self._read, fn)
        except BaseException:
            self._read_over()
            raise
        future.add_done_callback(lambda done: done.cancelled() and self._read_over())  # never ran: never counted off
        return future

    def _read(self, fn: Callable[[], T]) -> T:
        _held.jobs = []
        try:
            return _with_connections(fn)
        finally:
            held, _held.jobs = _held.jobs, None
            for fn_held, future in held:
                self._linger(fn_held, future)
            self._read_over()

    def _read_over(self) -> None:
        """Count a read as over. After the last one queued or running, what is gathered is written (LINGER_S
        later): no read is left for the write to compete with."""
        with self._lock:
            self._reading -= 1
            due = self._reading == 0 and self._unwritten
            if due:
                self._unwritten = False
        if due:
            self._linger(_nothing, Future())

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
        return self._put(WRITE, fn, counted=True)

    def record(self, fn: Callable[[], T]) -> Future[T]:
        """Queue the small write a read needs (a trace, a receipt) ahead of other writes."""
        return self._put(BOOKKEEPING, fn)

    def ahead(self, fn: Callable[[], T]) -> Future[T]:
        """Queue a small write that reads wait for and that needs no other queued write done first (trace ids
        reserved) ahead of everything: behind the traces of a busy moment it held every read that needed an id
        (on PostgreSQL under load, each of them over a second, every 256 retrievals)."""
        return self._put(AHEAD, fn)

    def record_after(self, write: Callable[[list[Item]], list[T]], item: Item) -> Future[T]:
        """Queue ``item`` for ``write`` (items -> their results, in order): a write nobody waits for (a retrieval's
        trace). From a read worker it is queued once the read is over (its answer rendered). With
        ``commit_seconds`` it is gathered with the other items for ``write`` and written with them by one call:
        before their commit, before another job of the batch, or once no read is left; should that call fail,
        each is written alone, so that only a failing one fails. Without, it is written alone LINGER_S after it
        is queued, so it does not compete with the rest of the answer (its sending too) for the interpreter.
        The future, its result, is done once it is committed. Never wait for it in that read; to read what it
        wrote, ``flush`` first."""
        future: Future[T] = Future()
        job = _Gathered(write, item)
        held = getattr(_held, "jobs", None)
        if held is None:
            self._linger(job, future)
        else:
            held.append((job, future))
        return future

    def _linger(self, fn: Callable[[], T], future: Future[T]) -> None:
        batched = self._commit_s > 0  # committed with the others of commit_seconds
        not_before = time.monotonic() + LINGER_S
        if batched and isinstance(fn, _Gathered):  # it costs the writer nothing until the batch writes it
            not_before = 0.0
            with self._lock:
                self._unwritten = True
        self._jobs.put((BOOKKEEPING, next(self._order), fn, future, False, not_before, batched))

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until the writes queued so far have run (gathered ones written), committed or not (a benchmark's
        pause between two timed reads, so the writer never runs during one)."""
        ran = threading.Event()
        self._linger(ran.set, Future())
        ran.wait(timeout)

    def flush(self) -> None:
        """Have the traces queued so far committed now rather than with later ones (what waits for them calls it)."""
        if self._commit_s > 0:
            self.record(lambda: None)

    def coalesce(self, key: str, job: Callable[[], object]) -> None:
        """Queue ``job`` as a write unless a job under ``key`` is already waiting to run (it does the same work,
        e.g. applying all pending feedback). When the queue is full nothing is queued: the work stays pending
        and the next such job does it."""
        with self._lock:
            if key in self._waiting:
                return
            self._waiting.add(key)

        def run() -> object:
            with self._lock:
                self._waiting.discard(key)
            return job()

        try:
            self.write(run)
        except Overloaded:
            with self._lock:
                self._waiting.discard(key)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every write queued so far has run."""
        self._put(WRITE, lambda: None).result(timeout)

    def close(self, timeout: float = 60.0) -> None:
        """Run what is queued, then stop the writer (at exit, so nothing accepted is dropped)."""
        if self._writer.is_alive():
            self._jobs.put((STOP, next(self._order), None, None, False, 0.0, False))
            self._writer.join(timeout)
        self._reads.shutdown(wait=True)
        self._outside.shutdown(wait=True)

    def _put(self, priority: int, fn: Callable[[], T], *, counted: bool = False) -> Future[T]:
        """Queue ``fn``; a ``counted`` job holds one place of the write depth until it has run."""
        future: Future[T] = Future()
        self._jobs.put((priority, next(self._order), fn, future, counted, 0.0, False))
        return future

    def _write_loop(self) -> None:
        batch: _Batch | None = None  # traces written and not yet committed
        while True:
            try:
                job = self._jobs.get(timeout=batch.remaining() if batch is not None else None)
            except queue.Empty:  # the batch's time is up (without one, the wait has no timeout)
                batch.commit()
                batch = None
                continue
            priority, _, fn, future, counted, not_before, batched = job
            if batch is not None and not (batched and batch.open):
                batch.commit()
                batch = None
            if priority == STOP:
                return
            wait = not_before - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if batched:
                batch = batch or _Batch(self._commit_s, self._turns)
                batch.run(fn, future)
                if not batch.open:
                    batch.commit()
                    batch = None
                continue
            result, failure, runs = None, None, future.set_running_or_notify_cancel()
            if runs:
                try:
                    with self._turns:
                        result = _with_connections(fn)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                    failure = exc
            if counted:  # its place is given back before its caller hears, so the caller sees the depth without it
                with self._lock:
                    self._depth -= 1
            if runs and failure is not None:
                future.set_exception(failure)
            elif runs:
                future.set_result(result)


class _Gathered:
    """An item for ``write`` (``Booth.record_after``); called, it is written alone."""

    __slots__ = ("write", "item")

    def __init__(self, write: Callable[[list[Item]], list[T]], item: Item) -> None:
        self.write, self.item = write, item

    def __call__(self) -> object:
        return self.write([self.item])[0]


class _Batch:
    """Writes run in one open transaction on the writer, each in a savepoint of its own, committed together;
    their futures are done at the commit. Gathered items are held until the commit or the next other job, then
    written by one call per writing function, in a savepoint of their own. The transaction (and the turn of the
    machine's writers) begins with the first write, not with the first item: items only gathered until the
    commit hold the database for the few milliseconds of writing them."""

    def __init__(self, seconds: float, turns: Turns) -> None:
        self._deadline = time.monotonic() + seconds
        self._done: list[tuple[Future, object]] = []
        self._gathered: dict[Callable, list[tuple[object, Future]]] = {}
        self._pending = 0  # gathered items not written yet
        self._failed = False
        self._turns = turns
        self._atomic: transaction.Atomic | None = None  # begun by the first write

    def _begin(self) -> None:
        if self._atomic is not None:
            return
        close_old_connections()
        atomic = transaction.atomic()
        self._turns.take()  # held until the commit
        try:
            atomic.__enter__()
        except BaseException:
            self._turns.give()
            raise
        self._atomic = atomic

    @property
    def open(self) -> bool:
        """More writes may join (room left, none failed)."""
        return not self._failed and len(self._done) + self._pending < BATCH_MAX

    def remaining(self) -> float:
        return max(self._deadline - time.monotonic(), 0.0)

    def run(self, fn: Callable[[], object], future: Future) -> None:
        if not future.set_running_or_notify_cancel():
            return
        if isinstance(fn, _Gathered):
            self._gathered.setdefault(fn.write, []).append((fn.item, future))
            self._pending += 1
            return
        self._write_gathered()  # a job sees what was queued before it
        try:
            self._begin()
            with transaction.atomic():  # its savepoint
                self._done.append((future, fn()))
        except BaseException as exc:  # noqa: BLE001 - undone alone by its savepoint (or never begun); to its future
            future.set_exception(exc)
            self._failed = True  # committed at once: what follows starts afresh

    def _write_gathered(self) -> None:
        gathered, self._gathered, self._pending = self._gathered, {}, 0
        if gathered:
            try:
                self._begin()
            except BaseException as exc:  # noqa: BLE001 - no transaction to write in (e.g. the disk failed)
                for pending in gathered.values():
                    for _, future in pending:
                        future.set_exception(exc)
                self._failed = True
                return
        for write, pending in gathered.items():
            try:
                with transaction.atomic():
                    results = write([item for item, _ in pending])
            except BaseException as exc:  # noqa: BLE001 - undone by its savepoint; each item is tried alone below
                if len(pending) == 1:
                    pending[0][1].set_exception(exc)
                    continue
                results = None
            if results is not None:
                self._done.extend((future, result) for (_, future), result in zip(pending, results, strict=True))
                continue
            for item, future in pending:
                try:
                    with transaction.atomic():
                        self._done.append((future, write([item])[0]))
                except BaseException as exc:  # noqa: BLE001 - undone alone by its savepoint; handed to its future
                    future.set_exception(exc)

    def commit(self) -> None:
        """Write what is gathered, then commit (or, if the transaction was spoiled, roll back and fail every
        write of it)."""
        error: BaseException | None = None
        self._write_gathered()
        if self._atomic is None:  # nothing was written
            return
        try:
            if connection.needs_rollback:
                error = DatabaseError("the writes committed together were rolled back after an error")
            self._atomic.__exit__(None, None, None)
        except BaseException as exc:  # noqa: BLE001 - handed to every write of the batch
            error = exc
        finally:
            self._turns.give()
            close_old_connections()
        for future, result in self._done:
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


def _nothing() -> None:
    """A job that only has the batch write what it has gathered (every other job does that first)."""


def _with_connections(fn: Callable[[], T]) -> T:
    close_old_connections()
    try:
        return fn()
    finally:
        close_old_connections()


def inline(fn: Callable[[], T]) -> T:
    """Run a write here and now, in the caller's thread: what services do when no booth is given (scripts,
    tests, the embedded SDK, Celery tasks)."""
    return fn()


_booth: Booth | None = None
_booth_lock = threading.Lock()


def get_booth() -> Booth:
    """The process's booth, created on first use."""
    global _booth
    with _booth_lock:
        if _booth is None:
            sqlite = connection.vendor == "sqlite"
            _booth = Booth(S("READ_WORKERS"), S("TRACE_COMMIT_SECONDS"),
                           Turns(f"{connection.settings_dict['NAME']}-writers.lock") if sqlite else None)
        return _booth
