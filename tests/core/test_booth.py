"""The booth's write that nobody waits for (a retrieval's trace): held until the read that asked for it is over,
then started after a short linger."""
from __future__ import annotations

import time

import pytest
from django.db import IntegrityError

from core.booth import LINGER_S, Booth


@pytest.fixture
def booth():
    made = Booth(2)
    yield made
    made.close()


def test_a_write_asked_for_in_a_read_waits_until_the_read_is_over(booth):
    ran: list[str] = []

    def read() -> tuple[object, bool]:
        later = booth.record_after(lambda: ran.append("trace"))
        time.sleep(0.05)  # the writer is idle all along, yet does not start it
        return later, bool(ran)

    later, ran_during_read = booth.read(read).result(5)
    assert not ran_during_read
    later.result(5)
    assert ran == ["trace"]


def test_a_read_that_fails_still_lets_its_writes_go(booth):
    held = []

    def read() -> None:
        held.append(booth.record_after(lambda: "written"))
        raise ValueError("the view failed")

    with pytest.raises(ValueError):
        booth.read(read).result(5)
    assert held[0].result(5) == "written"


def test_outside_a_read_the_write_starts_after_the_linger(booth):
    asked = time.monotonic()
    started = booth.record_after(time.monotonic).result(5)
    assert started - asked >= LINGER_S


# On SQLite the traces of retrievals are committed together (each commit empties every reader's page cache).

def _caller(name: str):
    from django.utils import timezone

    from grains.models import Caller
    return lambda: Caller.objects.create(client=name, role="chat", created_at=timezone.now()).pk


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


def test_traces_wait_for_one_commit_together(batching):
    futures = [batching.record_after(_caller(f"t{i}")) for i in range(3)]
    time.sleep(0.2)  # all three have run on the writer, none committed
    assert not any(f.done() for f in futures)
    assert _committed("t0", "t1", "t2") == set()
    batching.flush()
    assert all(f.result(5) for f in futures)
    assert _committed("t0", "t1", "t2") == {"t0", "t1", "t2"}


def test_any_other_write_commits_the_traces_first(batching):
    trace = batching.record_after(_caller("trace"))
    seen = batching.write(lambda: _committed("trace")).result(5)  # runs on the writer: another connection looks
    assert trace.done() and seen == {"trace"}


def test_traces_are_committed_when_the_window_closes(transactional_db):
    booth = Booth(1, commit_seconds=0.2)
    try:
        first = time.monotonic()
        futures = [booth.record_after(_caller(f"w{i}")) for i in range(2)]
        for f in futures:
            f.result(5)
        assert time.monotonic() - first >= 0.2
        assert _committed("w0", "w1") == {"w0", "w1"}
    finally:
        booth.close()


def test_a_failing_trace_fails_alone_and_ends_its_commit(batching):
    def fails() -> None:
        _caller("dup")()
        _caller("dup")()  # the unique (client, role) refuses it: its savepoint undoes both rows

    before = batching.record_after(_caller("before"))
    failed = batching.record_after(fails)
    with pytest.raises(IntegrityError):
        failed.result(5)
    assert before.result(5)  # committed at once, not 30 s later
    assert _committed("before", "dup") == {"before"}


def test_closing_the_booth_commits_what_it_holds(transactional_db):
    booth = Booth(1, commit_seconds=30.0)
    held = booth.record_after(_caller("held"))
    booth.close()
    assert held.result(0) and _committed("held") == {"held"}


def test_settling_waits_for_the_traces_to_run_not_to_commit(batching):
    trace = batching.record_after(_caller("settled"))
    batching.settle(5)
    assert not trace.done()  # written, its commit still to come
    batching.flush()
    assert trace.result(5)
