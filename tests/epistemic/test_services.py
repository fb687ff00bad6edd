"""The epistemic layer through its services: relations found on store, their effect on belief and ranking."""
from __future__ import annotations

from datetime import timedelta

import pytest

from core.errors import Conflict, InvalidInput, NotFound
from epistemic.selectors import relation_list
from epistemic.services import relation_assert
from grains.models import ActivityEvent, ConfidenceEvent, Grain
from grains.selectors import successors_resolve
from graph.models import Conduit
from graph.services import grain_retrieve
from memory.forgetting import grain_forget
from memory.store import grain_store

pytestmark = pytest.mark.django_db


def store(content: str, t, **kw) -> Grain:
    return grain_store(content=content, now=t, **kw).grain


def fresh(grain: Grain) -> Grain:
    return Grain.objects.get(pk=grain.pk)


def test_moving_supersedes_where_alice_lived_and_retrieval_answers_with_the_new_city(t0):
    paris = store("Alice lives in Paris", t0, caller="chat:chat")
    berlin = store("Alice moved to Berlin", t0 + timedelta(days=30), caller="chat:chat")
    relation = Conduit.objects.get(kind="supersedes")
    assert (relation.source_id, relation.target_id, relation.asserted_by) == (berlin.pk, paris.pk, "rules")
    assert (fresh(paris).status, fresh(paris).superseded_by) == ("dormant", berlin.pk)
    found = grain_retrieve(query="where does Alice live", caller="chat:chat", now=t0 + timedelta(days=31))
    ids = [g.id for g in found.grains]
    assert ids[:2] == [berlin.pk, paris.pk]
    assert found.grains[1].superseded_by == berlin.pk and found.grains[0].superseded_by is None
    assert fresh(paris).status == "dormant", "finding a superseded grain does not wake it"
    assert ActivityEvent.objects.filter(kind="grains.grain_demoted", payload__reason=f"superseded by #{berlin.pk}")


def test_a_contradiction_lowers_both_confidences_and_is_listed(t0):
    old = store("Bob is 30 years old", t0, provenance="ai_stated")
    new = store("Bob is 35 years old", t0, provenance="ai_stated")
    assert (fresh(old).confidence, fresh(new).confidence) == (pytest.approx(0.6), pytest.approx(0.6))
    listed = relation_list(kind="contradicts")
    assert len(listed) == 1 and {listed[0]["source"]["id"], listed[0]["target"]["id"]} == {old.pk, new.pk}
    reasons = list(ConfidenceEvent.objects.filter(grain=old).values_list("reason", "related_grain_id"))
    assert reasons[-1] == ("contradicted", new.pk)
    found = grain_retrieve(query="how old is Bob", now=t0)
    flagged = {g.id: g.contradicted_by for g in found.grains}
    assert flagged == {old.pk: [new.pk], new.pk: [old.pk]}
    assert {fresh(old).status, fresh(new).status} == {"active"}, "a close call quarantines neither"


def test_the_clearly_less_believed_side_of_a_contradiction_is_quarantined(t0):
    told = store("The launch is on March 3", t0, provenance="user_stated")
    guessed = store("The launch is on March 10", t0, provenance="ai_inferred")
    assert fresh(told).status == "active"
    assert fresh(guessed).status == "quarantined"
    assert ActivityEvent.objects.get(kind="grains.grain_quarantined").payload["reason"] == \
        f"lost a contradiction with #{told.pk}"
    assert [g.id for g in grain_retrieve(query="when is the launch", now=t0).grains] == [told.pk]


def test_corroboration_from_a_second_caller_raises_confidence_once(t0):
    grain = store("The office wifi password is tulip42", t0, caller="alice:chat")
    prior = fresh(grain).confidence
    store("The office wifi password is tulip42", t0, caller="alice:chat")
    assert fresh(grain).confidence == prior, "the same caller repeating itself is not corroboration"
    store("the office wifi password is tulip42", t0, caller="bob:chat")
    assert fresh(grain).confidence == pytest.approx(prior + 0.05)
    store("The office wifi password is tulip42", t0, caller="bob:chat")
    assert fresh(grain).confidence == pytest.approx(prior + 0.05)
    history = list(ConfidenceEvent.objects.filter(grain=grain).order_by("pk").values_list("reason", "caller__client"))
    assert history == [("prior:ai_stated", None), ("corroborated", "bob")]


def test_a_supporting_statement_raises_both_confidences(t0):
    a = store("Alice lives in Paris", t0)
    b = store("Alice resides in Paris", t0)
    assert Conduit.objects.filter(kind="supports").count() == 1
    assert fresh(a).confidence == pytest.approx(0.75) and fresh(b).confidence == pytest.approx(0.75)


def test_unrelated_grains_that_share_words_get_no_relation(t0):
    store("Alice lives in Paris", t0)
    store("Bob lives in Paris", t0)
    store("Alice loves Paris in spring", t0)
    assert not Conduit.objects.exclude(kind="association").exists()


def test_callers_assert_relations_and_bad_ones_are_refused_without_writing(t0):
    cause = store("A storm closed the airport", t0)
    effect = store("My flight was cancelled", t0)
    conduit, created = relation_assert(source_id=effect.pk, target_id=cause.pk, kind="caused_by",
                                       caller="agent:chat", note="the agent knows", now=t0)
    assert created and (conduit.asserted_by, conduit.note) == ("caller", "the agent knows")
    assert relation_assert(source_id=effect.pk, target_id=cause.pk, kind="caused_by", now=t0)[1] is False
    before = Conduit.objects.count()
    with pytest.raises(InvalidInput, match="'kind'"):
        relation_assert(source_id=effect.pk, target_id=cause.pk, kind="likes", now=t0)
    with pytest.raises(InvalidInput, match="itself"):
        relation_assert(source_id=effect.pk, target_id=effect.pk, kind="supports", now=t0)
    with pytest.raises(NotFound) as err:
        relation_assert(source_id=effect.pk, target_id=987654, kind="supports", now=t0)
    assert err.value.details["field"] == "target_id"
    relation_assert(source_id=effect.pk, target_id=cause.pk, kind="supersedes", now=t0)
    with pytest.raises(Conflict, match="cannot supersede its successor"):
        relation_assert(source_id=cause.pk, target_id=effect.pk, kind="supersedes", now=t0)
    assert Conduit.objects.count() == before + 1


def test_a_supersession_that_would_close_a_loop_of_any_length_is_refused(t0):
    a, b, c = (store(f"Erin's desk is on floor {n}", t0) for n in (3, 4, 5))
    relation_assert(source_id=b.pk, target_id=a.pk, kind="supersedes", now=t0)
    relation_assert(source_id=c.pk, target_id=b.pk, kind="supersedes", now=t0)
    before = Conduit.objects.count()
    with pytest.raises(Conflict, match="through its successors"):
        relation_assert(source_id=a.pk, target_id=c.pk, kind="supersedes", now=t0)
    assert Conduit.objects.count() == before
    assert (fresh(a).superseded_by, fresh(b).superseded_by, fresh(c).superseded_by) == (b.pk, c.pk, None)
    assert successors_resolve([a.pk])[a.pk] == c.pk  # the chain still ends in a live grain


def test_a_cause_that_would_close_a_loop_of_any_length_is_refused(t0):
    """The carpet is soaked because the pump failed, which failed because the power went out: the power cannot
    then be out because the carpet is soaked, nor the pump fail because of it."""
    power, pump, carpet = (store(text, t0) for text in ("The power went out in the basement",
                                                         "The basement pump failed overnight",
                                                         "The storage room carpet is soaked"))
    relation_assert(source_id=pump.pk, target_id=power.pk, kind="caused_by", now=t0)
    relation_assert(source_id=carpet.pk, target_id=pump.pk, kind="caused_by", now=t0)
    before = Conduit.objects.count()
    for effect, cause in ((pump, carpet), (power, carpet), (power, pump)):
        with pytest.raises(Conflict, match="caused by its own effect"):
            relation_assert(source_id=effect.pk, target_id=cause.pk, kind="caused_by", now=t0)
    assert Conduit.objects.count() == before
    relation_assert(source_id=carpet.pk, target_id=power.pk, kind="caused_by", now=t0)  # a cause further back: fine


def test_supersession_chains_resolve_through_tombstones(t0):
    first = store("Dana's phone number is 555-0101", t0)
    second = store("Dana's phone number is 555-0202", t0)
    third = store("Dana's phone number is 555-0303", t0)
    relation_assert(source_id=second.pk, target_id=first.pk, kind="supersedes", now=t0)
    relation_assert(source_id=third.pk, target_id=second.pk, kind="supersedes", now=t0)
    tomb = grain_forget(grain_id=second.pk, reason="wrong number", now=t0)
    assert tomb.superseded_by == third.pk
    assert fresh(first).superseded_by == second.pk  # the pointer names the forgotten grain ...
    assert successors_resolve([second.pk]) == {second.pk: third.pk}  # ... and resolves through its tombstone
    grain_forget(grain_id=third.pk, reason="gone", now=t0)
    assert successors_resolve([second.pk]) == {second.pk: None}  # a chain ending in a plain tombstone
