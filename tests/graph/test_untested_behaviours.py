"""Behaviours no other test checks: the abstractions cap of a retrieval, a blocked client's feedback, and useful
feedback waking a grain that went dormant after it was retrieved."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client

from core.booth import get_booth
from core.errors import CallerBlocked
from dreams.models import Dream
from grains.corrections import caller_block_set
from grains.models import ActivityEvent, Caller, ConfidenceEvent, Grain
from graph.models import Conduit, Feedback
from graph.services import cluster_rebuild, decay_sweep, feedback_record, grain_retrieve
from memory.dreaming import dream_run
from memory.store import grain_store_batch
from tests.api.conftest import Api
from vitals.services import gauges_recount

# Four clumps sharing no word, each stored in its own context: four clusters, four abstractions.
CLUMPS = {
    "garden": ["Lena grows tomatoes in the greenhouse", "Lena waters the greenhouse tomatoes each morning",
               "The greenhouse tomatoes ripen in July", "Lena picks the ripe tomatoes in July"],
    "music": ["Omar plays the violin in an orchestra", "Omar tunes his violin before every concert",
              "The orchestra rehearses the violin concerto on Thursdays", "Omar bought a new violin bow in Vienna"],
    "cycling": ["Priya rides her bicycle to the office", "Priya oils the bicycle chain every weekend",
                "The bicycle lane by the office floods in winter", "Priya bought bicycle lights for the winter"],
    "baking": ["Tomas bakes sourdough bread on Sundays", "Tomas feeds the sourdough starter with rye flour",
               "The sourdough loaves rise overnight in the pantry", "Tomas sells sourdough loaves at the market"],
}
# Names the garden and music clumps by many of their words, cycling and baking by one word each.
QUERY = "greenhouse tomatoes ripen July violin orchestra concerto Thursdays bicycle sourdough"


def status_of(*grains: Grain) -> list[str]:
    return [Grain.objects.get(pk=g.pk).status for g in grains]


# --- 1. RETRIEVE_ABSTRACTIONS -----------------------------------------------------------------------------------

@pytest.fixture
def dreamt(t0) -> dict[str, int]:
    """The four clumps dreamt of by the real cycle: their contexts -> the id of their abstraction."""
    for context, contents in CLUMPS.items():
        grain_store_batch(items=[{"content": c, "context": context} for c in contents], now=t0)
    assert cluster_rebuild(now=t0).clusters == len(CLUMPS)
    result = dream_run(now=t0)
    assert (len(result.accepted), result.rejected, result.error) == (len(CLUMPS), [], "")
    by_context = {}
    for dream in Dream.objects.select_related("grain"):
        assert dream.grain.level == 1
        [context] = {g.context for g in Grain.objects.filter(pk__in=dream.sources)}
        by_context[context] = dream.grain_id
    assert set(by_context) == set(CLUMPS)
    return by_context


def retrieve(t0, flux_settings, cap: int):
    flux_settings(RETRIEVE_ABSTRACTIONS=cap)
    return grain_retrieve(query=QUERY, limit=5, enforce_feedback=False, now=t0)


@pytest.mark.django_db
def test_a_retrieval_returns_at_most_retrieve_abstractions_of_them_the_best_and_none_at_zero(
        dreamt, t0, flux_settings) -> None:
    everything = retrieve(t0, flux_settings, 10)
    assert {a.id for a in everything.abstractions} == set(dreamt.values()), "all four are reachable"
    capped = retrieve(t0, flux_settings, 2)
    assert len(capped.abstractions) == 2
    # The best two: those of the clumps the query names by many words, and the first two when nothing is capped.
    assert {a.id for a in capped.abstractions} == {dreamt["garden"], dreamt["music"]}
    assert [a.id for a in capped.abstractions] == [a.id for a in everything.abstractions[:2]]
    assert [a.rank for a in capped.abstractions] == [1, 2]
    assert retrieve(t0, flux_settings, 3).abstractions[2].id in {dreamt["cycling"], dreamt["baking"]}
    none = retrieve(t0, flux_settings, 0)
    assert none.abstractions == []
    # The grains list does not depend on the cap: same grains, same order, no abstraction among them.
    grains = [(g.id, g.rank) for g in everything.grains]
    assert len(grains) == 5 and all(g.level == 0 for g in everything.grains)
    assert [(g.id, g.rank) for g in capped.grains] == [(g.id, g.rank) for g in none.grains] == grains


# --- 2. a blocked client's feedback -----------------------------------------------------------------------------

@pytest.fixture
def api(transactional_db) -> Api:
    """The REST test client of tests/api (its fixture is not visible from here), set up and drained the same way."""
    cache.clear()
    gauges_recount()
    yield Api(Client())
    get_booth().drain()


def grain_state(grain_id: int) -> dict:
    return Grain.objects.filter(pk=grain_id).values(
        "status", "weight", "confidence", "useful_count", "not_useful_count", "cues", "last_accessed_at",
        "tier").get()


def conduit_state() -> list[tuple]:
    return list(Conduit.objects.order_by("pk").values_list("pk", "weight", "uses", "useful_uses"))


def test_a_blocked_clients_feedback_is_refused_and_writes_nothing_while_others_rate(api) -> None:
    for content in ("Rex the sheepdog sleeps in the barn", "Rex the sheepdog herds the sheep at dawn",
                    "The barn roof leaks when it rains"):
        assert api.post("/store", {"content": content, "context": "farm"}, caller="rex-bot:chat").status_code == 201
    mine = api.post("/retrieve", {"query": "Rex sheepdog"}, caller="rex-bot:chat").json()
    theirs = api.post("/retrieve", {"query": "Rex sheepdog"}, caller="friend:chat").json()
    get_booth().drain()
    grain = mine["grains"][0]["id"]
    assert grain == theirs["grains"][0]["id"]
    caller_block_set(caller="rex-bot:chat", blocked=True, reason="spam", actor="ops:admin")
    before, conduits = grain_state(grain), conduit_state()
    confidence_events, callers = ConfidenceEvent.objects.count(), Caller.objects.count()

    rating = {"trace_id": mine["trace_id"], "grain_id": grain, "useful": True}
    for who in ("rex-bot:chat", "rex-bot:memory_writer"):  # the block is on the client, every role of it
        refused = api.post("/feedback", rating, caller=who)
        assert refused.status_code == 403, (who, refused.json())
        error = refused.json()["error"]
        assert error["code"] == "caller_blocked" and "spam" in error["message"], (who, error)
    for useful in (True, False):  # the in-process service refuses too
        with pytest.raises(CallerBlocked, match="blocked by an operator"):
            feedback_record(trace_id=mine["trace_id"], grain_id=grain, useful=useful, caller="rex-bot:chat")
    get_booth().drain()
    assert not Feedback.objects.exists()
    assert grain_state(grain) == before and conduit_state() == conduits
    assert ConfidenceEvent.objects.count() == confidence_events and Caller.objects.count() == callers
    assert Caller.objects.get(client="rex-bot", role="chat").rated == 0
    assert not ActivityEvent.objects.filter(kind="graph.feedback_applied").exists()

    accepted = api.post("/feedback", {"trace_id": theirs["trace_id"], "grain_id": grain, "useful": True},
                        caller="friend:chat")
    assert accepted.status_code == 202 and accepted.json()["status"] == "accepted"
    get_booth().drain()
    feedback = Feedback.objects.get()
    assert (str(feedback.caller), feedback.item.trace_id, feedback.useful) == ("friend:chat", theirs["trace_id"], True)
    assert feedback.applied_at is not None
    assert grain_state(grain)["useful_count"] == before["useful_count"] + 1


# --- 3. useful feedback wakes a dormant grain ------------------------------------------------------------------

@pytest.mark.django_db
def test_useful_feedback_wakes_a_grain_gone_dormant_since_its_retrieval_and_not_useful_leaves_it(t0) -> None:
    bike, kayak = (r.grain for r in grain_store_batch(items=[
        {"content": "Theo keeps his bike in the cellar"}, {"content": "Theo keeps his kayak in the cellar"}], now=t0))
    found = grain_retrieve(query="where does Theo keep things in the cellar", caller="theo:chat", now=t0)
    assert {g.id for g in found.grains} == {bike.pk, kayak.pk}
    later = t0 + timedelta(days=40)  # the caller rates late: meanwhile decay put both to sleep
    decay_sweep(now=later)
    assert status_of(bike, kayak) == ["dormant", "dormant"]

    feedback_record(trace_id=found.trace_id, grain_id=bike.pk, useful=True, caller="theo:chat", now=later)
    feedback_record(trace_id=found.trace_id, grain_id=kayak.pk, useful=False, caller="theo:chat", now=later)
    assert status_of(bike, kayak) == ["active", "dormant"]

    def moves(grain: Grain) -> list[tuple]:
        return [(e.kind, e.payload["from"], e.payload["to"], e.payload["reason"]) for e in
                ActivityEvent.objects.filter(payload__grain_id=grain.pk, kind__startswith="grains.grain_")
                .exclude(kind="grains.grain_stored").order_by("pk")]

    assert [m[:3] for m in moves(bike)] == [("grains.grain_demoted", "active", "dormant"),
                                            ("grains.grain_promoted", "dormant", "active")]
    assert moves(bike)[1][3] == "useful"
    assert [m[:3] for m in moves(kayak)] == [("grains.grain_demoted", "active", "dormant")]
    assert ActivityEvent.objects.get(kind="grains.grain_promoted").created_at == later
    # Woken for good: the next sweep finds it alive, while the grain rated not useful sleeps on.
    decay_sweep(now=later + timedelta(hours=1))
    assert status_of(bike, kayak) == ["active", "dormant"]
