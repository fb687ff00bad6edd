"""The booth's write that nobody waits for (a retrieval's trace): held until the read that asked for it is over,
then started after a short linger; on SQLite gathered with the others of its commit and written by one call."""
from __future__ import annotations

import time

import pytest
from django.db import IntegrityError

from core.booth import LINGER_S, Booth
from tests.transactions import writer_held


@pytest.fixture
def booth():
    made = Booth(2)
    yield made
    made.close()


def test_a_write_asked_for_in_a_read_waits_until_the_read_is_over(booth):
    ran: list[str] = []

    def read() -> tuple[object, bool]:
        later = booth.record_after(lambda items: [ran.append(item) for item in items], "trace")
        time.sleep(0.05)  # the writer is idle all along, yet does not start it
        return later, bool(ran)

    later, ran_during_read = booth.read(read).result(5)
    assert not ran_during_read
    later.result(5)
    assert ran == ["trace"]


def test_a_read_that_fails_still_lets_its_writes_go(booth):
    held = []

    def read() -> None:
        held.append(booth.record_after(lambda items: items, "written"))
        raise ValueError("the view failed")

    with pytest.raises(ValueError):
        booth.read(read).result(5)
    assert held[0].result(5) == "written"


def test_outside_a_read_the_write_starts_after_the_linger(booth):
    asked = time.monotonic()
    started = booth.record_after(lambda items: [time.monotonic() for _ in items], None).result(5)
    assert started - asked >= LINGER_S


def test_a_write_reads_wait_for_and_that_waits_on_nothing_runs_ahead_of_the_queued_ones(booth):
    """Trace ids reserved behind the traces of a busy moment held every read that needed one."""
    import threading

    ran: list[str] = []
    busy = threading.Event()
    writer_held(booth, busy, timeout=5)  # what follows queues up
    queued = [booth.record(lambda i=i: ran.append(f"record {i}")) for i in range(3)]
    queued += [booth.record_after(lambda items: [ran.append(item) for item in items], "trace")]
    reserved = booth.ahead(lambda: ran.append("ahead"))
    busy.set()
    reserved.result(5)
    for future in queued:
        future.result(5)
    assert ran[0] == "ahead" and sorted(ran[1:]) == ["record 0", "record 1", "record 2", "trace"]


# On SQLite the traces of retrievals are committed together (each commit empties every reader's page cache).

def _callers(names: list[str]) -> list[int]:
    """A gathered write: a caller per name, their ids; ``calls`` keeps the names of each call."""
    from django.utils import timezone

    from grains.models import Caller
    calls.append(list(names))
    return [Caller.objects.create(client=name, role="chat", created_at=timezone.now()).pk for name in names]


calls: list[list[str]] = []


@pytest.fixture(autouse=True)
def _no_calls_yet():
    calls.clear()


def _committed(*names: str) -> set[str]:
    """Which of ``names`` a connection of another thread sees (what is committed)."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from grains.models import Caller

    def read() -> set[str]:
        try:
            return set(Caller.objects.filter(client__in=names).values_list("client", flat=True))
        finally:
            connection.close()
    with ThreadPoolExecutor(1) as other:
        return other.submit(read).result(5)


@pytest.fixture
def batching(transactional_db):
    made = Booth(1, commit_seconds=30.0)
    yield made
    made.close()


def test_traces_wait_for_one_commit_together_and_are_written_by_one_call(batching):
    futures = [batching.record_after(_callers, f"t{i}") for i in range(3)]
    time.sleep(0.2)  # all three are with the writer, none committed
    assert not any(f.done() for f in futures)
    assert _committed("t0", "t1", "t2") == set()
    batching.flush()
    ids = [f.result(5) for f in futures]
    assert _committed("t0", "t1", "t2") == {"t0", "t1", "t2"}
    assert calls == [["t0", "t1", "t2"]]
    assert len(set(ids)) == 3 and all(isinstance(pk, int) for pk in ids)  # each future has its own result


def test_any_other_write_commits_the_traces_first(batching):
    trace = batching.record_after(_callers, "trace")
    seen = batching.write(lambda: _committed("trace")).result(5)  # runs on the writer: another connection looks
    assert trace.done() and seen == {"trace"}


def test_traces_are_committed_when_the_window_closes(transactional_db):
    booth = Booth(1, commit_seconds=0.2)
    try:
        first = time.monotonic()
        futures = [booth.record_after(_callers, f"w{i}") for i in range(2)]
        for f in futures:
            f.result(5)
        assert time.monotonic() - first >= 0.2
        assert _committed("w0", "w1") == {"w0", "w1"}
    finally:
        booth.close()


def test_a_failing_trace_fails_alone(batching):
    """Written together, one that fails undoes the call (its savepoint); each is then written alone, and only
    it fails."""
    futures = [batching.record_after(_callers, name) for name in ("before", "dup", "dup", "after")]
    batching.flush()
    assert futures[0].result(5) and futures[1].result(5) and futures[3].result(5)
    with pytest.raises(IntegrityError):  # the unique (client, role) refuses the second
        futures[2].result(5)
    assert _committed("before", "dup", "after") == {"before", "dup", "after"}
    assert calls == [["before", "dup", "dup", "after"], ["before"], ["dup"], ["dup"], ["after"]]


def test_closing_the_booth_commits_what_it_holds(transactional_db):
    booth = Booth(1, commit_seconds=30.0)
    held = booth.record_after(_callers, "held")
    booth.close()
    assert held.result(0) and _committed("held") == {"held"}


def test_settling_waits_for_the_traces_to_run_not_to_commit(batching):
    trace = batching.record_after(_callers, "settled")
    batching.settle(5)
    assert calls == [["settled"]] and not trace.done()  # written, its commit still to come
    batching.flush()
    assert trace.result(5)


def test_traces_are_written_once_no_read_is_left(transactional_db):
    """With other reads queued or running, a trace waits for them (under load, traces are written many at a
    time); once the last is over it is written (not committed) without waiting for the commit."""
    import threading

    booth = Booth(2, commit_seconds=30.0)
    try:
        release = threading.Event()
        other = booth.read(lambda: release.wait(5))
        trace = booth.read(lambda: booth.record_after(_callers, "first")).result(5)
        time.sleep(LINGER_S + 0.1)
        assert calls == []  # the other read still runs
        release.set()
        other.result(5)
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls == [["first"]] and not trace.done()  # written, its commit still to come
    finally:
        booth.close()


def test_a_read_cancelled_before_it_ran_is_not_waited_for(transactional_db):
    import threading

    booth = Booth(1, commit_seconds=30.0)
    try:
        release = threading.Event()
        running = booth.read(lambda: release.wait(5) and booth.record_after(_callers, "kept"))
        queued = booth.read(lambda: None)
        assert queued.cancel()  # its client went away before a worker took it
        release.set()
        trace = running.result(5)
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls == [["kept"]] and not trace.done()
    finally:
        booth.close()


@pytest.mark.sqlite_only
def test_gathered_traces_hold_the_database_only_while_they_are_written(batching):
    """A batch begins its transaction with its first write: items only gathered leave the database free for
    another process's writer until the commit writes them."""
    import sqlite3

    from django.db import connection

    trace = batching.record_after(_callers, "held")
    time.sleep(0.1)  # with the writer now, gathered
    other = sqlite3.connect(connection.settings_dict["NAME"], timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")  # "database is locked" while a transaction of the booth is open
        other.rollback()
    finally:
        other.close()
    batching.flush()
    assert trace.result(5) and _committed("held") == {"held"}
