"""Every counter behind the health signals, produced by the service that causes it (none written by hand).

Each test drives real services (store, retrieve, feedback, decay sweep) into the situation that must be
counted, checks the counter moved by exactly what happened, and reads the signal the way GET /health does
(``health_summary``) to see it follow.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from django.db.models import Q, Sum

from core.conf import flux_setting as S
from grains.models import Grain, Status, Tier
from graph.models import Conduit, ConduitKind, TraceItem
from graph.results import RetrieveResult
from graph.services import decay_sweep, feedback_record, grain_retrieve
from memory.store import grain_store, grain_store_batch
from vitals.models import Counter, Gauge
from vitals.selectors import health_summary

pytestmark = pytest.mark.django_db

CALLER = "agent:chat"
CHAIN = [
    "Alice adopted a greyhound named Pixel last spring.",
    "She walks him every morning along the old canal.",
    "The canal towpath floods after heavy rain in November.",
]


def counted() -> dict[str, float]:
    """Every counter summed over all its hours."""
    return {r["name"]: r["total"] for r in Counter.objects.values("name").annotate(total=Sum("value"))}


def moved(before: dict[str, float]) -> dict[str, float]:
    """The counters that changed since ``before``, by how much."""
    after = counted()
    return {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after.keys() | before.keys()
            if after.get(name, 0.0) != before.get(name, 0.0)}


def health(name: str, now: datetime) -> dict:
    """One signal as GET /health reports it at ``now``."""
    return next(s for s in health_summary(write_depth=0, now=now)["signals"] if s["name"] == name)


def value(name: str, now: datetime) -> float | None:
    return health(name, now)["value"]


def near(expected: float) -> object:
    """``expected`` as GET /health shows it: rounded to 4 places."""
    return pytest.approx(expected, abs=1e-4)


def ask(query: str, now: datetime, **options: object) -> RetrieveResult:
    return grain_retrieve(query=query, caller=CALLER, enforce_feedback=False, now=now, **options)


def rate(found: RetrieveResult, grain: Grain | int, useful: bool, now: datetime) -> None:
    grain_id = grain if isinstance(grain, int) else grain.pk
    feedback_record(trace_id=found.trace_id, grain_id=grain_id, useful=useful, caller=CALLER, now=now)


def chain_of(now: datetime, flux_settings: Callable[..., None], weight: float) -> list[Grain]:
    """Three grains linked in a chain only by their shared context, each link of ``weight``; the query
    "greyhound" finds the first directly, the second one hop and the third two hops away."""
    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=1, CONTEXT_CONDUIT_WEIGHT=weight, CUE_LEARNING=False)
    return [grain_store(content=c, context="walks", now=now).grain for c in CHAIN]


def link(a: Grain, b: Grain) -> Conduit:
    return Conduit.objects.get(Q(source=a, target=b) | Q(source=b, target=a))


def hops_of(found: RetrieveResult) -> dict[int, int]:
    return {g.id: g.hops for g in found.grains}


# stored, stored_unlinked -> orphan_rate


def test_a_grain_stored_with_no_conduit_is_counted_unlinked_and_raises_the_orphan_rate(t0):
    before = counted()
    lone = grain_store(content="Quentin collects antique barometers", context="hobbies", now=t0).grain
    assert not Conduit.objects.filter(Q(source=lone) | Q(target=lone)).exists()
    assert moved(before) == {"stored": 1, "stored_unlinked": 1}
    assert value("orphan_rate", t0) == 1.0

    before = counted()
    linked = grain_store(content="Quentin restores old sailing clocks", context="hobbies", now=t0).grain
    assert link(lone, linked).kind == ConduitKind.ASSOCIATION  # the previous grain of its context
    assert moved(before) == {"stored": 1}
    assert value("orphan_rate", t0) == 0.5  # one of the two grains stored arrived unconnected

    before = counted()
    assert not grain_store(content="Quentin collects antique barometers", context="hobbies", now=t0).created
    assert moved(before) == {}, "a known content is corroborated, not stored again"
    assert health("orphan_rate", t0)["state"] == "warming_up"
    assert health("orphan_rate", t0 + timedelta(days=1))["state"] == "warning"  # half the new grains are orphans


def test_a_batch_counts_each_new_grain_and_only_the_unconnected_ones_as_unlinked(t0):
    earlier = grain_store(content=CHAIN[0], context="walks", now=t0).grain
    before = counted()
    results = grain_store_batch(items=[{"content": c, "context": "walks"} for c in CHAIN[1:]]
                                + [{"content": "Zeppelins float over Friedrichshafen"}], now=t0)
    *walks, zeppelin = [r.grain for r in results]
    assert link(earlier, walks[0]) and link(walks[0], walks[1])  # each linked to the grain before it in "walks"
    assert not Conduit.objects.filter(Q(source=zeppelin) | Q(target=zeppelin)).exists()
    assert moved(before) == {"stored": len(results), "stored_unlinked": 1}
    assert value("orphan_rate", t0) == near(2 / (len(results) + 1))  # the zeppelin, and the first, stored alone


def test_related_facts_stored_together_are_not_orphans(t0):
    before = counted()
    results = grain_store_batch(items=[{"content": c, "context": "walks"} for c in CHAIN[:2]], now=t0)
    assert all(Conduit.objects.filter(Q(source=r.grain) | Q(target=r.grain)).exists() for r in results)
    assert moved(before) == {"stored": len(results)}


# retrievals, returned, returned_hops -> avg_hops_per_retrieval


def test_each_retrieval_counts_the_grains_it_returned_and_how_far_they_were(t0, flux_settings):
    chain = chain_of(t0, flux_settings, 0.6)
    assert value("avg_hops_per_retrieval", t0) is None  # nothing returned yet
    before = counted()
    found = ask("greyhound", t0)
    hops = hops_of(found)
    assert hops == {chain[0].pk: 0, chain[1].pk: 1, chain[2].pk: 2}
    assert moved(before) == {"retrievals": 1, "returned": len(hops), "returned_hops": sum(hops.values())}
    spread = value("avg_hops_per_retrieval", t0)
    assert spread == near(sum(hops.values()) / len(hops))

    before = counted()
    direct = ask("greyhound", t0, propagation=False)
    assert hops_of(direct) == {chain[0].pk: 0}
    assert moved(before) == {"retrievals": 1, "returned": 1}  # no hop travelled
    assert value("avg_hops_per_retrieval", t0) < spread


# fallbacks -> fallback_trigger_rate


def test_a_retrieval_that_needs_the_archive_or_finds_nothing_counts_a_fallback(t0, flux_settings):
    flux_settings(EPISTEMIC_ENABLED=False)
    bike = grain_store(content="Theo keeps his bike in the cellar", now=t0).grain
    decay_sweep(now=t0 + timedelta(days=40))
    decay_sweep(now=t0 + timedelta(days=140))
    assert Grain.objects.get(pk=bike.pk).status == Status.ARCHIVED
    later = t0 + timedelta(days=141)
    grain_store(content="Mira waters the ferns on Sundays", now=later)

    before = counted()
    assert ask("ferns", later).grains
    assert moved(before) == {"retrievals": 1, "returned": 1}
    assert value("fallback_trigger_rate", later) == 0.0

    before = counted()
    assert ask("volcano", later).grains == []
    assert moved(before) == {"retrievals": 1, "fallbacks": 1}
    assert value("fallback_trigger_rate", later) == 0.5  # one of two retrievals found nothing

    before = counted()
    assert [g.id for g in ask("Theo bike", later).grains] == [bike.pk]
    # Only the archive held it: a fallback, and the grain found there is woken (a promotion).
    assert moved(before) == {"retrievals": 1, "returned": 1, "fallbacks": 1, "promotions": 1}
    assert Grain.objects.get(pk=bike.pk).status == Status.ACTIVE
    rate_after_archive = value("fallback_trigger_rate", later)
    assert rate_after_archive == near(2 / 3)  # two of three retrievals fell back

    before = counted()
    assert [g.id for g in ask("Theo bike", later).grains] == [bike.pk]
    assert moved(before) == {"retrievals": 1, "returned": 1}, "found live now: no fallback"
    assert value("fallback_trigger_rate", later) < rate_after_archive


# rated, useful, not_useful -> retrieval_success_rate, feedback_compliance_rate


def test_each_new_verdict_is_counted_once_and_moves_success_and_compliance(t0, flux_settings):
    chain = chain_of(t0, flux_settings, 0.6)
    found = ask("greyhound", t0)
    returned = len(found.grains)
    assert value("feedback_compliance_rate", t0) == 0.0 and value("retrieval_success_rate", t0) is None

    before = counted()
    rate(found, chain[0], True, t0)
    counts = moved(before)
    assert (counts["rated"], counts["useful"], counts.get("not_useful", 0)) == (1, 1, 0)
    assert value("retrieval_success_rate", t0) == 1.0
    assert value("feedback_compliance_rate", t0) == near(1 / returned)

    before = counted()
    rate(found, chain[1], False, t0)
    counts = moved(before)
    assert (counts["rated"], counts.get("useful", 0), counts["not_useful"]) == (1, 0, 1)
    assert value("retrieval_success_rate", t0) == 0.5
    assert value("feedback_compliance_rate", t0) == near(2 / returned)

    before = counted()
    rate(found, chain[1], False, t0)  # the same verdict again: already recorded
    assert moved(before) == {}


# path_conduits, path_weight_sum -> avg_conduit_weight; weight_drops, weight_drop_sum -> avg_weight_drop_on_failure


def test_rating_a_grain_counts_the_weights_on_its_path_and_what_not_useful_took_from_them(t0, flux_settings):
    chain = chain_of(t0, flux_settings, 0.6)
    found = ask("greyhound", t0)
    path = TraceItem.objects.get(trace_id=found.trace_id, grain_id=chain[2].pk).conduits
    assert len(path) == 2
    weights = [Conduit.objects.get(pk=c).weight for c in path]  # new conduits: no decay yet
    assert value("avg_conduit_weight", t0) is None and value("avg_weight_drop_on_failure", t0) is None

    before = counted()
    rate(found, chain[2], False, t0)
    dropped = sum(weights) - sum(Conduit.objects.get(pk=c).weight for c in path)
    assert dropped > 0
    counts = moved(before)
    assert (counts["path_conduits"], counts["weight_drops"]) == (len(path), len(path))
    assert counts["path_weight_sum"] == pytest.approx(sum(weights))
    assert counts["weight_drop_sum"] == pytest.approx(dropped)
    assert value("avg_conduit_weight", t0) == near(sum(weights) / len(path))
    assert value("avg_weight_drop_on_failure", t0) == near(dropped / len(path))

    again = ask("greyhound", t0)
    one_hop = TraceItem.objects.get(trace_id=again.trace_id, grain_id=chain[1].pk).conduits
    current = Conduit.objects.get(pk=one_hop[0]).weight
    before = counted()
    rate(again, chain[1], True, t0)
    counts = moved(before)
    assert counts["path_conduits"] == len(one_hop) == 1
    assert counts["path_weight_sum"] == pytest.approx(current)
    assert "weight_drops" not in counts and "weight_drop_sum" not in counts, "useful feedback drops nothing"


# highways_formed, highways_lost -> highway_growth_rate, highway_count


def test_a_path_crossing_the_highway_weight_counts_a_highway_formed_then_lost(t0, flux_settings):
    # Links half a learning step below a highway: one useful rating of the grain they lead to makes one.
    chain = chain_of(t0, flux_settings, S("HIGHWAY_WEIGHT") - S("LEARNING_RATE") / 2)
    road = link(chain[0], chain[1])
    growth = health("highway_growth_rate", t0)
    assert (growth["value"], value("highway_count", t0)) == (0.0, 0)

    found = ask("greyhound", t0)
    before = counted()
    rate(found, chain[1], True, t0)
    road.refresh_from_db()
    assert road.weight >= S("HIGHWAY_WEIGHT")
    assert moved(before)["highways_formed"] == 1
    assert value("highway_count", t0) == 1
    assert value("highway_growth_rate", t0) == near(1 / growth["window_days"])

    before = counted()
    rate(ask("greyhound", t0), chain[1], True, t0)  # stronger still, but it was a highway already
    assert "highways_formed" not in moved(before)

    ratings = 0
    while road.weight >= S("HIGHWAY_WEIGHT"):
        assert ratings < 10, "not-useful ratings should weaken the road below the highway weight"
        before = counted()
        rate(ask("greyhound", t0), chain[1], False, t0)
        ratings += 1
        road.refresh_from_db()
        lost = moved(before).get("highways_lost", 0)
        assert lost == (1 if road.weight < S("HIGHWAY_WEIGHT") else 0)
    assert value("highway_count", t0) == 0
    assert value("highway_growth_rate", t0) == 0.0  # one formed, one lost


def test_grains_useful_together_strengthen_their_link_into_a_highway(t0, flux_settings):
    flux_settings(STORE_LINK_NEIGHBOURS=0, CUE_LEARNING=False,
                  CONTEXT_CONDUIT_WEIGHT=S("HIGHWAY_WEIGHT") - S("LEARNING_RATE") / 2)
    a = grain_store(content="Bo plays the cello in an orchestra.", context="music", now=t0).grain
    b = grain_store(content="Bo practises the cello at dawn.", context="music", now=t0).grain
    found = ask("cello", t0)
    assert hops_of(found) == {a.pk: 0, b.pk: 0}  # both direct hits: their link is on no path
    rate(found, a, True, t0)
    before = counted()
    rate(found, b, True, t0)  # useful with a, in the same retrieval: their association is reinforced
    assert link(a, b).weight >= S("HIGHWAY_WEIGHT")
    counts = moved(before)
    assert counts["highways_formed"] == 1 and "path_conduits" not in counts
    assert value("highway_count", t0) == 1
    assert value("highway_growth_rate", t0) > 0


# shortcuts_created -> shortcut_creation_rate


def test_a_useful_grain_two_hops_away_earns_one_counted_shortcut(t0, flux_settings):
    chain = chain_of(t0, flux_settings, 0.6)
    found = ask("greyhound", t0)
    assert hops_of(found)[chain[2].pk] == 2
    assert value("shortcut_creation_rate", t0) == 0.0

    before = counted()
    rate(found, chain[2], True, t0)
    shortcut = Conduit.objects.get(kind=ConduitKind.SHORTCUT)
    assert (shortcut.source_id, shortcut.target_id) == (chain[0].pk, chain[2].pk)
    assert moved(before)["shortcuts_created"] == 1
    first = value("shortcut_creation_rate", t0)
    assert first == 100.0  # one shortcut in one retrieval: 100 per 100 retrievals

    again = ask("greyhound", t0)
    assert hops_of(again)[chain[2].pk] == 1  # over the shortcut now
    before = counted()
    rate(again, chain[2], True, t0)
    assert "shortcuts_created" not in moved(before)
    assert Conduit.objects.filter(kind=ConduitKind.SHORTCUT).count() == 1
    assert value("shortcut_creation_rate", t0) == first / 2  # the same one shortcut over two retrievals


# conduits_dissolved -> conduit_dissolution_rate


def test_a_learned_conduit_decayed_to_its_floor_dissolves_on_the_next_failure_and_is_counted(t0, flux_settings):
    chain = chain_of(t0, flux_settings, 0.6)
    flux_settings(ACTIVATION_THRESHOLD=S("WEIGHT_MIN") / 10)  # a link at its floor still carries some signal
    faded = link(chain[0], chain[1])
    later = t0 + timedelta(days=20 * S("CONDUIT_HALF_LIFE_DAYS") + S("CONDUIT_GRACE_HOURS") / 24)
    found = ask("greyhound", later)
    assert TraceItem.objects.get(trace_id=found.trace_id, grain_id=chain[1].pk).conduits == [faded.pk]
    conduits = Gauge.objects.get(name="conduits").value
    assert conduits == Conduit.objects.count() == 2
    assert value("conduit_dissolution_rate", later) == 0.0

    before = counted()
    rate(found, chain[1], False, later)
    assert not Conduit.objects.filter(pk=faded.pk).exists()
    counts = moved(before)
    assert counts["conduits_dissolved"] == 1
    assert Gauge.objects.get(name="conduits").value == conduits - 1
    assert value("conduit_dissolution_rate", later) == near(1 / (conduits - 1))  # dissolved over the conduits left

    kept = link(chain[1], chain[2])
    again = ask("Pixel greyhound", later)
    assert chain[1].pk not in hops_of(again), "the dissolved link no longer carries signal"
    assert Conduit.objects.filter(pk=kept.pk).exists()


# promotions -> promotion_events; the core tier -> core_grain_count


def test_a_grain_rated_useful_promotion_threshold_times_is_promoted_to_core_once(t0):
    ferry = grain_store(content="The ferry leaves at 7:40", now=t0).grain
    assert (value("core_grain_count", t0), value("promotion_events", t0)) == (0, 0)
    for i in range(S("PROMOTION_THRESHOLD") + 1):
        before = counted()
        rate(ask("ferry", t0), ferry, True, t0)
        tier = Grain.objects.get(pk=ferry.pk).tier
        reached = i + 1 >= S("PROMOTION_THRESHOLD")
        assert tier == (Tier.CORE if reached else Tier.WORKING)
        assert moved(before).get("promotions", 0) == (1 if i + 1 == S("PROMOTION_THRESHOLD") else 0)
    assert Gauge.objects.get(name="tier:core").value == 1
    assert value("core_grain_count", t0) == 1
    assert value("promotion_events", t0) == 1


def test_a_dormant_grain_woken_by_a_retrieval_counts_a_promotion_and_demotion_counts_none(t0):
    lamp = grain_store(content="The lamp in the hall needs a new bulb", now=t0).grain
    asleep = t0 + timedelta(days=S("DORMANT_AFTER_DAYS") + 1)
    before = counted()
    decay_sweep(now=asleep)
    assert Grain.objects.get(pk=lamp.pk).status == Status.DORMANT
    assert "promotions" not in moved(before)
    assert value("dormant_grain_rate", asleep) == 1.0
    assert value("promotion_events", asleep) == 0

    before = counted()
    assert [g.id for g in ask("hall lamp", asleep).grains] == [lamp.pk]
    assert Grain.objects.get(pk=lamp.pk).status == Status.ACTIVE
    assert moved(before)["promotions"] == 1
    assert value("promotion_events", asleep) == 1
    assert value("dormant_grain_rate", asleep) == 0.0
