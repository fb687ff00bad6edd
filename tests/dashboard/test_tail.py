"""Following the activity log when ids commit out of order: the pure tail, the relay's poll on the database, and
(on PostgreSQL) two transactions committing in the other order than their ids."""
from __future__ import annotations

import pytest
from django.utils import timezone

from dashboard.relay import relay_poll
from dashboard.selectors import last_event_id
from dashboard.tail import LogTail
from grains.models import ActivityEvent
from tests.transactions import held_open


def test_ids_in_order_leave_no_gap():
    tail = LogTail(10)
    assert tail.take([11, 12, 13], now=0.0) == {11, 12, 13}
    assert tail.last == 13 and tail.late() == []
    assert tail.take([12, 13], now=1.0) == set(), "an id is taken once"


def test_an_id_passed_on_the_way_is_asked_for_until_it_comes():
    tail = LogTail(10)
    assert tail.take([11, 15], now=0.0) == {11, 15}
    assert tail.late() == [(12, 14)]
    assert tail.take([13, 16], now=1.0) == {13, 16}
    assert tail.late() == [(12, 12), (14, 14)], "the gap is split around the id that came"
    assert tail.take([12, 13, 14], now=2.0) == {12, 14}
    assert tail.late() == [] and tail.last == 16


def test_a_gap_that_never_fills_is_forgotten_after_the_settle_time():
    tail = LogTail(0, settle_seconds=5.0)
    tail.take([3], now=0.0)
    tail.take([9], now=4.0)
    assert tail.late() == [(1, 2), (4, 8)]
    tail.take([], now=5.5)
    assert tail.late() == [(4, 8)]
    assert tail.take([1], now=6.0) == set(), "too late: treated as delivered"
    tail.take([], now=9.5)
    assert tail.late() == []


def test_at_most_max_gaps_are_kept_the_lowest_going_first():
    tail = LogTail(0, max_gaps=3)
    tail.take(range(2, 20, 2), now=0.0)  # gaps at 1, 3, ..., 17
    assert tail.late() == [(13, 13), (15, 15), (17, 17)]


def _event(kind: str, *, pk: int | None = None) -> ActivityEvent:
    return ActivityEvent.objects.create(pk=pk, kind=kind, payload={}, created_at=timezone.now())


@pytest.mark.django_db
def test_the_relay_sends_an_event_that_commits_after_a_higher_id():
    start = last_event_id()
    tail = LogTail(start)
    # Ids given here to play PostgreSQL's commit order: start + 2 is visible before start + 1.
    _event("test.second", pk=start + 2)
    assert [e["id"] for e in relay_poll(tail)] == [start + 2]
    _event("test.first", pk=start + 1)
    assert [(e["id"], e["kind"]) for e in relay_poll(tail)] == [(start + 1, "test.first")]
    assert relay_poll(tail) == []
    _event("test.third", pk=start + 3)
    assert [e["id"] for e in relay_poll(tail)] == [start + 3]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_writers_committing_out_of_id_order_both_reach_the_relay():
    tail = LogTail(last_event_id())
    with held_open(lambda: _event("test.slow").pk) as held:  # takes its id first and commits last
        quick = _event("test.quick").pk
        assert quick > held
        assert [e["id"] for e in relay_poll(tail)] == [quick]
    assert [e["id"] for e in relay_poll(tail)] == [held]
    assert relay_poll(tail) == []
