"""Storing grains: duplicates, tombstones, links, and bad input that writes nothing."""
from __future__ import annotations

import pytest

from core.errors import FluxError, InvalidInput, NotFound, Tombstoned
from grains.models import ActivityEvent, Caller, Grain, Tombstone
from graph.models import Conduit, Feedback
from graph.services import feedback_record, grain_retrieve
from memory.forgetting import grain_forget
from memory.store import grain_store, grain_store_batch

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, ...]:
    return (Grain.objects.count(), Conduit.objects.count(), ActivityEvent.objects.count(),
            Tombstone.objects.count(), Feedback.objects.count(), Caller.objects.count())


def test_exact_duplicate_returns_the_existing_grain_and_corroborates_it(t0):
    first = grain_store(content="Paris is the capital of France", provenance="ai_stated", now=t0)
    again = grain_store(content="  paris is the capital   of FRANCE ", caller="another:chat", now=t0)
    assert (first.created, again.created) == (True, False)
    assert again.grain.pk == first.grain.pk
    assert Grain.objects.count() == 1
    assert again.grain.confidence == pytest.approx(0.75)


def test_duplicate_of_a_dormant_grain_wakes_it(t0):
    grain = grain_store(content="The gate code is 4412", now=t0).grain
    Grain.objects.filter(pk=grain.pk).update(status="dormant", weight=0.06)
    again = grain_store(content="The gate code is 4412", now=t0).grain
    assert (again.status, again.weight) == ("active", 0.5)


def test_tombstoned_content_is_refused_until_restored(t0):
    grain = grain_store(content="My old address was 12 Elm Street", now=t0).grain
    grain_forget(grain_id=grain.pk, reason="user asked to forget", now=t0)
    assert not Grain.objects.exists() and Tombstone.objects.count() == 1
    before = counts()
    with pytest.raises(Tombstoned, match="restore set to true") as err:
        grain_store(content="my old address was 12 elm street", now=t0)
    assert err.value.details["forgotten_grain_id"] == grain.pk
    assert counts() == before
    restored = grain_store(content="My old address was 12 Elm Street", restore=True, now=t0)
    assert restored.created and restored.restored
    assert not Tombstone.objects.exists()


def test_new_grains_link_to_lexical_neighbours_and_their_context(t0):
    a = grain_store(content="Lena grows tomatoes in her greenhouse.", now=t0).grain
    b = grain_store(content="Lena waters the greenhouse tomatoes daily.", now=t0).grain
    c = grain_store(content="Unrelated words entirely here.", context="chat-1", now=t0).grain
    d = grain_store(content="Something else said next.", context="chat-1", now=t0).grain
    pairs = {(x.source_id, x.target_id): x for x in Conduit.objects.all()}
    assert (a.pk, b.pk) in pairs and pairs[(a.pk, b.pk)].kind == "association"
    assert (c.pk, d.pk) in pairs and pairs[(c.pk, d.pk)].weight == pytest.approx(0.4)
    assert (a.pk, c.pk) not in pairs


@pytest.mark.parametrize("kwargs,field", [
    ({"content": ""}, "content"),
    ({"content": "   \n "}, "content"),
    ({"content": "x" * 4001}, "content"),
    ({"content": 42}, "content"),
    ({"content": None}, "content"),
    ({"content": "ok", "provenance": "gossip"}, "provenance"),
    ({"content": "ok", "context": 5}, "context"),
    ({"content": "ok", "occurred_at": "yesterday"}, "occurred_at"),
    ({"content": "ok", "caller": "no-role"}, "caller"),
    ({"content": "ok", "caller": "bot:overlord"}, "role"),
])
def test_bad_store_input_raises_a_clear_error_and_writes_nothing(kwargs, field, t0):
    before = counts()
    with pytest.raises(InvalidInput) as err:
        grain_store(now=t0, **kwargs)
    assert err.value.details["field"] == field
    assert field.split("_")[0] in err.value.message
    assert counts() == before


def test_batch_is_all_or_nothing_with_the_index_of_the_bad_item(t0):
    items = [{"content": "one"}, {"content": "two"}, {"content": ""}, {"content": "four"}]
    with pytest.raises(InvalidInput, match="item 2") as err:
        grain_store_batch(items=items, now=t0)
    assert err.value.details["index"] == 2
    assert counts() == (0, 0, 0, 0, 0, 0)


def test_batch_with_a_tombstoned_item_writes_nothing(t0):
    gone = grain_store(content="forget me", now=t0).grain
    grain_forget(grain_id=gone.pk, reason="test", now=t0)
    before = counts()
    with pytest.raises(Tombstoned) as err:
        grain_store_batch(items=[{"content": "new fact"}, {"content": "Forget me"}], now=t0)
    assert err.value.details["index"] == 1
    assert counts() == before


def test_batch_over_the_cap_is_refused_whole(t0):
    with pytest.raises(InvalidInput, match="limit is 100"):
        grain_store_batch(items=[{"content": f"fact {i}"} for i in range(101)], now=t0)
    assert not Grain.objects.exists()


def test_batch_stores_in_order_and_maps_duplicates(t0):
    results = grain_store_batch(items=[{"content": "a fact"}, {"content": "b fact"}, {"content": "A fact"}], now=t0)
    assert [r.created for r in results] == [True, True, False]
    assert results[2].grain.pk == results[0].grain.pk


@pytest.mark.parametrize("kwargs,error,text", [
    ({"trace_id": 999, "grain_id": 1, "useful": True}, NotFound, "trace 999 does not exist"),
    ({"trace_id": "abc", "grain_id": 1, "useful": True}, InvalidInput, "trace_id"),
    ({"trace_id": True, "grain_id": 1, "useful": True}, InvalidInput, "trace_id"),
    ({"useful": "yes"}, InvalidInput, "useful"),
    ({"grain_id": 424242}, InvalidInput, "was not returned by trace"),
])
def test_bad_feedback_raises_a_clear_error_and_writes_nothing(kwargs, error, text, t0):
    grain = grain_store(content="Kai drinks oat milk.", now=t0).grain
    trace = grain_retrieve(query="oat milk", now=t0)
    call = {"trace_id": trace.trace_id, "grain_id": grain.pk, "useful": True, **kwargs}
    before = counts()
    with pytest.raises(error, match=text):
        feedback_record(now=t0, **call)
    assert counts() == before


@pytest.mark.parametrize("kwargs", [{"query": ""}, {"query": 7}, {"query": "q" * 2001}, {"query": "x", "limit": 0},
                                    {"query": "x", "limit": "5"}, {"query": "x", "limit": 101}])
def test_bad_retrieve_input_is_refused(kwargs, t0):
    with pytest.raises(InvalidInput):
        grain_retrieve(now=t0, **kwargs)


def test_forgetting_an_unknown_grain_says_so(t0):
    with pytest.raises(NotFound, match="grain 77 does not exist"):
        grain_forget(grain_id=77, reason="x", now=t0)
    with pytest.raises(InvalidInput, match="reason"):
        grain_forget(grain_id=77, reason=" ", now=t0)


def test_every_error_has_a_code_and_a_message():
    err = InvalidInput("bad", details={"field": "x"})
    assert isinstance(err, FluxError)
    assert err.as_dict() == {"code": "invalid_input", "message": "bad", "details": {"field": "x"}}


def test_a_purged_grain_is_not_rateable_and_not_owed(t0):
    """Rating a grain purged since its retrieval says it was forgotten (it was 'not returned by the trace'); the
    callers it was returned to and that never rated it no longer count it as returned, so their feedback
    compliance is whole again once they rate the rest."""
    from grains.models import Caller
    from memory.forgetting import grain_purge

    kept = grain_store(content="Kai drinks oat milk with his coffee.", now=t0).grain
    doomed = grain_store(content="Kai keeps the oat milk in the door of the fridge.", now=t0).grain
    trace = grain_retrieve(query="Kai oat milk", caller="kai:chat", now=t0, enforce_feedback=False)
    assert {kept.pk, doomed.pk} <= {g.id for g in trace.grains}
    others = [g.id for g in trace.grains if g.id != doomed.pk]
    grain_purge(grain_id=doomed.pk, reason="private", actor="ops:admin", now=t0)
    with pytest.raises(NotFound, match=f"grain {doomed.pk} was forgotten"):
        feedback_record(trace_id=trace.trace_id, grain_id=doomed.pk, useful=True, caller="kai:chat", now=t0)
    for gid in others:
        feedback_record(trace_id=trace.trace_id, grain_id=gid, useful=True, caller="kai:chat", now=t0)
    kai = Caller.objects.get(client="kai", role="chat")
    assert (kai.returned, kai.rated) == (len(others), len(others))
