"""Bulk reads of the hot paths give what the ORM gives: the same rows, every value of the same type."""
from __future__ import annotations

from datetime import timedelta

import pytest

from core.bulk import bulk_fetch, bulk_insert, bulk_insert_rows
from grains.models import Caller, Grain
from graph.models import Conduit, ConduitKind, Trace, TraceItem
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


@pytest.mark.django_db
def test_rows_inserted_from_values_equal_those_inserted_from_instances(t0):
    a, b, c = (grain_store(content=text, caller="ana:chat", now=t0).grain.pk  # no words shared: not linked
               for text in ("Zebras graze quietly", "Violins need rosin", "Quantum bits decohere"))
    assert not Conduit.objects.exists()
    bulk_insert(Conduit, [Conduit(source_id=a, target_id=b, kind=ConduitKind.ASSOCIATION, weight=0.4,
                                  created_at=t0, last_decayed_at=t0)], ignore_conflicts=True)
    bulk_insert_rows(Conduit, ("source", "target", "kind", "weight", "created_at", "last_decayed_at"),
                     [(a, c, ConduitKind.ASSOCIATION, 0.4, t0, t0), (a, b, ConduitKind.ASSOCIATION, 0.9, t0, t0)],
                     ignore_conflicts=True)
    from_instance, from_values = Conduit.objects.get(target_id=b), Conduit.objects.get(target_id=c)
    assert from_instance.weight == 0.4  # the clashing row was skipped
    own = ("id", "target_id")
    assert ({k: v for k, v in _fields(from_values).items() if k not in own}
            == {k: v for k, v in _fields(from_instance).items() if k not in own})
    defaults = (from_values.asserted_by, from_values.uses, from_values.note, from_values.directed)
    assert defaults == ("store", 0, "", False)
