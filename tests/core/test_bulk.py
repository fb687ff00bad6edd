"""Bulk reads of the hot paths give what the ORM gives: the same rows, every value of the same type."""
from __future__ import annotations

from datetime import timedelta

import pytest

from core.bulk import bulk_fetch
from grains.models import Caller, Grain
from graph.models import Trace, TraceItem
from memory.store import grain_store


def _fields(obj) -> dict:
    values = {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}
    return {name: (value, type(value)) for name, value in values.items()}


@pytest.mark.django_db
def test_rows_read_in_bulk_equal_the_orms(t0):
    stored = [grain_store(content=f"Ana planted {n} tulips in the garden", context="garden", caller="ana:chat",
                          occurred_at=t0 - timedelta(days=n), now=t0).grain.pk for n in range(1, 4)]
    trace = Trace.objects.create(query="tulips", caller=Caller.objects.get(client="ana"), limit=3,
                                 entry_count=1, activated_count=3, created_at=t0)
    TraceItem.objects.create(trace=trace, grain_id=stored[0], rank=1, score=0.5, signal=1.0, hops=0,
                             origin_id=stored[0], path=[stored[0]], conduits=[], features={"length": 0.25})
    fetched = {g.pk: g for g in bulk_fetch(Grain, "id IN (%s, %s)", stored[:2])}
    assert set(fetched) == set(stored[:2])  # only what the WHERE selects
    for gid in stored[:2]:
        assert _fields(fetched[gid]) == _fields(Grain.objects.get(pk=gid))
        assert fetched[gid].occurred_at.tzinfo is not None  # aware, as the ORM's
    item, = bulk_fetch(TraceItem, "trace_id = %s", [trace.pk])
    assert _fields(item) == _fields(TraceItem.objects.get(trace=trace))  # JSON decoded
    assert item.features == {"length": 0.25}
    assert bulk_fetch(Grain, "id = %s", [max(stored) + 1]) == []


@pytest.mark.django_db
def test_only_the_fields_asked_for_are_read(t0, django_assert_num_queries):
    gid = grain_store(content="Ana planted tulips", caller="ana:chat", now=t0).grain.pk
    with django_assert_num_queries(1):
        grain, = bulk_fetch(Grain, "id = %s", [gid], fields=["content", "created_at"])
        assert (grain.pk, grain.content, grain.created_at) == (gid, "Ana planted tulips", t0)
    assert grain.get_deferred_fields() >= {"status", "weight", "occurred_at"}
    assert grain.status == "active"  # a deferred field is read when asked for, as with only()
