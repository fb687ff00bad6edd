"""The in-memory graph mirror answers what the SQL selectors answer, and follows every change to the graph."""
from __future__ import annotations

import gc
import json
import random
import weakref
from datetime import timedelta

import pytest
from django.db import connection, transaction

from epistemic.services import relation_assert
from grains.models import Grain, Status
from graph import mirror as mirror_module
from graph import selectors as selectors_module
from graph.algorithms.mirror import ConduitRow, GrainRow, GraphMirror
from graph.algorithms.propagation import Edge, Reach, WeightFloor
from graph.mirror import changes_prune, mirrors
from graph.models import Cluster, Conduit, ConduitKind, GraphChange
from graph.policy import DAY, decay_policy
from graph.selectors import (
    RETRIEVABLE,
    abstraction_sources,
    cluster_hubs,
    conduit_neighbours,
    contradictions_of,
    grain_rank_inputs,
    grains_in_status,
)
from graph.services import cluster_rebuild, decay_sweep, feedback_record, grain_retrieve
from memory.forgetting import grain_purge
from memory.retrieval import YOUNG_COLLECTION, retrieval_warm_up
from memory.store import grain_store, grain_store_batch
from tests.transactions import held_open

pytestmark = pytest.mark.django_db

FACTS = [
    "Ana: I planted tomatoes and basil in the greenhouse.", "Bo: the greenhouse roof leaks when it rains.",
    "Ana: the basil needs watering every morning.", "Bo: I fixed the roof of the greenhouse on Sunday.",
    "Ana: tomatoes ripen in August in the greenhouse.", "Cy: the market sells basil and tomatoes on Fridays.",
]


def edges_of(found: dict[int, list[Edge]]) -> set[tuple]:
    return {(here, e.target, round(e.weight, 9), e.conduit_id, e.target_status)
            for here, edges in found.items() for e in edges}


def assert_mirrors_the_database(now, statuses=RETRIEVABLE):
    view = mirrors.current()
    ids = list(Grain.objects.values_list("pk", flat=True)) + [10**9]  # and one that does not exist
    policy = decay_policy()
    assert edges_of(view.neighbours(ids, statuses=statuses, policy=policy, now=now.timestamp())) == \
        edges_of(conduit_neighbours(ids, statuses=statuses, policy=policy, now=now))
    recency = {"recency_half_life": 30 * DAY, "recency_floor": 0.5}
    assert view.rank_inputs(ids, statuses=statuses, policy=policy, now=now.timestamp(), **recency) == \
        grain_rank_inputs(ids, statuses=statuses, policy=policy, now=now, **recency)
    assert view.related(ids, ConduitKind.CONTRADICTS) == {g: sorted(o) for g, o in contradictions_of(ids).items()}
    assert view.related(ids, ConduitKind.ABSTRACTS, outgoing_only=True) == dict(abstraction_sources(ids))
    for wanted in (statuses, (Status.DORMANT,), (Status.ARCHIVED,)):  # what entry search asks of the best matches
        assert view.in_status(ids, wanted) == grains_in_status(ids, wanted), wanted
    clusters = list(Cluster.objects.values_list("pk", flat=True)) + [10**9]
    assert view.hubs(clusters) == cluster_hubs.get()
    return view


@pytest.fixture
def fresh_mirror():
    mirrors.clear()
    yield mirrors
    mirrors.clear()


def test_the_mirror_follows_stores_feedback_relations_status_moves_decay_and_purges(fresh_mirror, t0):
    grains = [grain_store(content=c, context="garden", now=t0).grain for c in FACTS]
    loads = mirrors.loads
    assert_mirrors_the_database(t0)
    assert mirrors.loads == loads + 1
    loads += 1

    found = grain_retrieve(query="greenhouse basil", limit=4, now=t0)
    for g in found.grains:
        feedback_record(trace_id=found.trace_id, grain_id=g.id, useful=g.rank <= 2, now=t0)  # conduits reweighed
    relation_assert(source_id=grains[1].pk, target_id=grains[3].pk, kind="contradicts", note="fixed", now=t0)
    Grain.objects.filter(pk=grains[5].pk).update(status=Status.DORMANT)
    grain_store_batch(items=[{"content": "Bo: the new roof panels are glass.", "context": "garden"}], now=t0)
    assert_mirrors_the_database(t0 + timedelta(hours=1))
    decay_sweep(now=t0 + timedelta(days=20))
    grain_purge(grain_id=grains[2].pk, reason="test", now=t0)  # its conduits go with it
    with connection.cursor() as cursor:  # a write that no service made (another process, the admin) is seen too
        cursor.execute("UPDATE graph_conduit SET weight = 0.9 WHERE id = %s", [Conduit.objects.first().pk])
    later = t0 + timedelta(days=21)
    view = assert_mirrors_the_database(later, statuses=RETRIEVABLE + (Status.QUARANTINED,))
    assert mirrors.loads == loads  # all of it followed from the change log, no reload
    assert grains[2].pk not in view.grains and view.related([grains[1].pk], ConduitKind.CONTRADICTS) == {
        grains[1].pk: [grains[3].pk]}


def test_the_mirror_follows_the_clusters_hubs_and_a_retrieval_asks_it_for_them(fresh_mirror, flux_settings, t0,
                                                                              monkeypatch):
    flux_settings(CLUSTER_MIN_SIZE=2)
    grain_store_batch(items=[{"content": c, "context": "garden"} for c in FACTS], now=t0)
    mirrors.current()
    loads = mirrors.loads
    assert cluster_rebuild(now=t0).clusters > 0
    assert_mirrors_the_database(t0)
    first = Cluster.objects.order_by("pk").first()
    with connection.cursor() as cursor:  # another process's rebuild: hubs changed, then a cluster removed
        cursor.execute("UPDATE graph_cluster SET hubs = %s WHERE id = %s", [json.dumps(first.hubs[:1]), first.pk])
    assert mirrors.current().hubs([first.pk]) == {first.pk: tuple(first.hubs[:1])}
    Grain.objects.filter(cluster_id=first.pk).update(cluster_id=None)
    Cluster.objects.filter(pk=first.pk).delete()
    assert_mirrors_the_database(t0)
    assert mirrors.loads == loads, "followed from the change log"

    cluster_rebuild(now=t0)
    asked = []
    monkeypatch.setattr(selectors_module.cluster_hubs, "get", lambda: asked.append(1) or {})
    found = grain_retrieve(query="greenhouse basil", limit=3, now=t0)
    assert found.grains and asked == [], "the hubs came from the mirror, not the database"


def test_a_retrievals_own_touch_is_applied_in_memory_not_logged(fresh_mirror, t0):
    grains = [grain_store(content=c, now=t0).grain for c in FACTS[:3]]
    mirrors.current()
    logged = GraphChange.objects.count()
    found = grain_retrieve(query="basil watering", limit=1, now=t0 + timedelta(days=3))
    assert GraphChange.objects.count() == logged
    assert mirrors.current().grains[found.grains[0].id].accessed_at == (t0 + timedelta(days=3)).timestamp()
    assert_mirrors_the_database(t0 + timedelta(days=4))
    assert found.grains[0].id == grains[2].pk


def test_a_log_it_cannot_follow_means_a_reload(fresh_mirror, t0, monkeypatch):
    grain_store(content=FACTS[0], now=t0)
    mirrors.current()
    loads = mirrors.loads
    with pytest.raises(RuntimeError), transaction.atomic():  # changes applied, then rolled back
        grain_store(content=FACTS[1], now=t0)
        assert len(mirrors.current().grains) == 2
        raise RuntimeError
    assert len(mirrors.current().grains) == 1 and mirrors.loads == loads + 1

    monkeypatch.setattr(mirror_module, "RELOAD_AFTER", 3)
    grain_store_batch(items=[{"content": c} for c in FACTS[1:]], now=t0)  # five grains and their conduits
    assert_mirrors_the_database(t0)
    assert mirrors.loads == loads + 2

    monkeypatch.setattr(mirror_module, "KEEP_CHANGES", 1)
    grain_store(content="Dee: the shed door sticks.", now=t0)
    assert changes_prune() > 0 and GraphChange.objects.exclude(kind=GraphChange.PRUNED).count() == 1
    assert_mirrors_the_database(t0)  # the change it stood on was pruned
    assert mirrors.loads == loads + 3


@pytest.mark.postgres_only  # one writer on SQLite: its rows commit in id order
@pytest.mark.django_db(transaction=True)
def test_a_change_committed_after_a_later_one_is_followed_all_the_same(fresh_mirror, t0):
    first, second = (grain_store(content=c, now=t0).grain.pk for c in FACTS[:2])
    mirrors.current()
    loads = mirrors.loads
    with held_open(lambda: Grain.objects.filter(pk=first).update(weight=0.9)):  # its log row's id comes first
        Grain.objects.filter(pk=second).update(weight=0.8)  # committed while the first is still open
        view = mirrors.current()
        assert (view.grains[first].weight, view.grains[second].weight) == (0.5, 0.8)
    assert mirrors.current().grains[first].weight == 0.9, "a transaction committed late is read all the same"
    assert_mirrors_the_database(t0)
    assert mirrors.loads == loads


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_late_commit_pruned_before_a_mirror_read_it_means_a_reload(fresh_mirror, t0, monkeypatch):
    first, second = (grain_store(content=c, now=t0).grain.pk for c in FACTS[:2])
    mirrors.current()
    loads = mirrors.loads
    with held_open(lambda: Grain.objects.filter(pk=first).update(weight=0.9)):  # its log row's id comes first
        Grain.objects.filter(pk=second).update(weight=0.8)
        assert mirrors.current().grains[second].weight == 0.8  # it stands on the later row now
    monkeypatch.setattr(mirror_module, "KEEP_CHANGES", 1)
    assert changes_prune() > 0  # the late commit's row went, the one the mirror stands on stays
    assert not GraphChange.objects.filter(kind=GraphChange.GRAIN, row=first).exists()
    assert mirrors.current().grains[first].weight == 0.9, "the pruned commit's change is read all the same"
    assert mirrors.loads == loads + 1
    assert_mirrors_the_database(t0)
    assert changes_prune() > 0  # rows all seen before: no reload
    mirrors.current()
    assert mirrors.loads == loads + 1


def test_a_loaded_mirror_is_out_of_the_cycle_collectors_sight(fresh_mirror, t0):
    grain_store_batch(items=[{"content": c} for c in FACTS], now=t0)
    view = mirrors.current()
    rows = [*view.grains.values(), *view.conduits.values()]
    assert rows and gc.get_freeze_count() > 0
    young = {id(o) for o in gc.get_objects()}  # what a full collection visits
    assert not any(id(row) in young for row in rows)
    assert id(view) not in young and id(view.grains) not in young


def test_a_reload_frees_the_old_mirror_first_and_freezes_no_garbage(fresh_mirror, t0, monkeypatch):
    grain_store_batch(items=[{"content": c} for c in FACTS], now=t0)
    old = weakref.ref(mirrors.current())
    load, seen = mirrors._load, []

    def watched(changes):
        seen.append(old() is None)
        return load(changes)

    class Cycle:
        pass

    monkeypatch.setattr(mirrors, "_load", watched)
    monkeypatch.setattr(mirror_module, "RELOAD_AFTER", 1)  # the next changes are more than it follows
    grain_store(content="Dee: the shed door sticks.", now=t0)
    garbage = Cycle()
    garbage.me, lost = garbage, weakref.ref(garbage)
    del garbage
    gc.disable()  # nothing collects it but the load
    try:
        mirrors.current()
    finally:
        gc.enable()
    assert seen == [True], "the old mirror is gone before the new one is built"
    assert lost() is None, "a cycle that was garbage at the load is not frozen with the mirror"


def test_graph_mirror_off_reads_the_database(fresh_mirror, flux_settings, t0):
    grain_store(content=FACTS[0], now=t0)
    flux_settings(GRAPH_MIRROR=False)
    loads = mirrors.loads
    assert mirrors.current() is None
    assert grain_retrieve(query="tomatoes", now=t0).grains
    assert mirrors.loads == loads


def test_the_pure_mirror_keeps_directions_statuses_and_its_index_of_conduits():
    view = GraphMirror()
    for gid, status in ((1, "active"), (2, "active"), (3, "dormant"), (4, "quarantined")):
        view.put_grain(gid, GrainRow(status, "working", 0.5, 0.8, 0.0, 0.0, None, None, 0, None))
    view.put_conduit(10, ConduitRow(1, 2, 0.5, 0.0, 0.0, False, "association"))
    view.put_conduit(11, ConduitRow(1, 3, 0.5, 0.0, 0.0, True, "shortcut"))
    view.put_conduit(12, ConduitRow(4, 1, 0.5, 0.0, 0.0, False, "association"))
    policy = decay_policy()
    out = view.neighbours([1, 2, 3], statuses=RETRIEVABLE, policy=policy, now=0.0)
    assert {h: [e.target for e in es] for h, es in out.items()} == {1: [2, 3], 2: [1]}  # 3 -> 1 is one-way
    view.put_conduit(11, ConduitRow(1, 3, 0.5, 0.0, 0.0, False, "shortcut"))  # replaced: now both ways
    assert [e.target for e in view.neighbours([3], statuses=RETRIEVABLE, policy=policy, now=0.0)[3]] == [1]
    view.drop_grain(2)
    view.drop_conduit(10)
    view.drop_conduit(10)  # twice is harmless
    assert view.neighbours([2], statuses=RETRIEVABLE, policy=policy, now=0.0) == {}
    assert {g: sorted(ids[1::3]) for g, (ids, _) in view._incident.items()} == {1: [11, 12], 3: [11], 4: [12]}


def test_the_mirror_counts_every_traversable_conduit_and_returns_those_not_under_the_floor():
    view = GraphMirror()
    for gid in range(1, 6):
        view.put_grain(gid, GrainRow("active" if gid != 5 else "quarantined", "working", 0.5, 0.8, 0.0, 0.0, None,
                                     None, 0, None))
    for cid, (other, weight) in enumerate(((2, 0.9), (3, 0.3), (4, 0.1), (5, 0.9)), start=20):
        view.put_conduit(cid, ConduitRow(1, other, weight, 0.0, 0.0, False, "association"))
    found = view.reach([1], WeightFloor({1: 0.3}, hub_degree=8), statuses=RETRIEVABLE, policy=decay_policy(),
                       now=0.0)[1]
    assert found.degree == 3  # the quarantined grain's conduit is not traversable, so not counted
    assert [e.target for e in found.edges] == [2, 3]
    # above the hub degree the floor rises (0.3 * sqrt(3 / 2) at degree 3): the edge of weight 0.3 is left out
    hub = view.reach([1], WeightFloor({1: 0.3}, hub_degree=2), statuses=RETRIEVABLE, policy=decay_policy(),
                     now=0.0)[1]
    assert hub.degree == 3 and [e.target for e in hub.edges] == [2]
    # none of its conduits over the floor: the grain is left out, its conduits not walked
    assert view.reach([1], WeightFloor({1: 0.95}, hub_degree=8), statuses=RETRIEVABLE, policy=decay_policy(),
                      now=0.0) == {}


def test_the_packed_conduits_answer_as_walking_every_conduit_would_in_the_same_order():
    """Random puts, re-puts and drops of grains and conduits (loops, directed ones, three kinds); after each
    step the mirror's neighbours (edges in order, weights to the bit) and related grains are those found by
    walking each grain's conduits, kept in the order they were put, one object at a time."""
    rng = random.Random(11)
    view, policy, now = GraphMirror(), decay_policy(), 50 * DAY
    statuses, rows, order = {}, {}, {}
    kinds = ("association", "contradicts", "abstracts")
    loops = directed = 0

    def walked(here: int) -> list[Edge]:
        edges = []
        for cid in order.get(here, ()):
            c = rows[cid]
            there = c.target if c.source == here else None if c.directed else c.source
            if there is not None and statuses.get(there) in RETRIEVABLE:
                edges.append(Edge(there, policy.conduit_weight(c.weight, c.created_at, c.decayed_at, now), cid,
                                  statuses[there]))
        return edges

    for step in range(600):
        move = rng.random()
        if move < 0.25:
            gid = rng.randint(1, 25)
            statuses[gid] = rng.choice(["active", "dormant", "quarantined", "archived"])
            view.put_grain(gid, GrainRow(statuses[gid], "working", 0.5, 0.8, 0.0, 0.0, None, None, 0, None))
        elif move < 0.3:
            gid = rng.randint(1, 25)
            statuses.pop(gid, None)
            view.drop_grain(gid)
        elif move < 0.8:
            cid = rng.randint(100, 160)
            row = ConduitRow(rng.randint(1, 25), rng.randint(1, 25), rng.uniform(0.05, 0.95), rng.uniform(0, 40 * DAY),
                             rng.uniform(0, 45 * DAY), rng.random() < 0.3, rng.choice(kinds))
            for end in (rows[cid].source, rows[cid].target) if cid in rows else ():
                order[end].pop(cid, None)
            rows[cid] = row
            loops, directed = loops + (row.source == row.target), directed + row.directed
            for end in (row.source, row.target):
                order.setdefault(end, {})[cid] = None
            view.put_conduit(cid, row)
        else:
            cid = rng.randint(100, 160)
            if cid in rows:
                old = rows.pop(cid)
                for end in (old.source, old.target):
                    order[end].pop(cid, None)
            view.drop_conduit(cid)
        ids = list(range(0, 27))
        found = view.neighbours(ids, statuses=RETRIEVABLE, policy=policy, now=now)
        assert found == {g: walked(g) for g in ids if walked(g)}, step
        # under a floor (the heaviest conduit of each grain kept as conduits come, change and go) and with some
        # grains relayed already: the same edges, those whose decayed weight is not under it, to the others
        pick = random.Random(step)  # its own: the steps stay those of ``rng``
        floor = WeightFloor({g: pick.uniform(0.0, 0.6) for g in ids}, hub_degree=3,
                            relayed=set(pick.sample(ids, 5)))
        reached = view.reach(ids, floor, statuses=RETRIEVABLE, policy=policy, now=now)
        over = {g: [e for e in walked(g) if e.weight >= floor.at(g, len(walked(g)))
                    and e.target not in floor.relayed] for g in ids}
        assert {g: r for g, r in reached.items() if r.edges} == {g: Reach(len(walked(g)), over[g])
                                                                 for g in ids if over[g]}, step
        for kind in kinds:
            for outgoing in (False, True):
                expected = {g: sorted(rows[c].target if rows[c].source == g else rows[c].source
                                      for c in order.get(g, ()) if rows[c].kind == kind
                                      and (rows[c].source == g or not outgoing)) for g in ids}
                assert view.related(ids, kind, outgoing_only=outgoing) == {g: o for g, o in expected.items() if o}
    assert loops and directed  # both were put (and dropped) along the way


def test_warming_up_for_retrievals_lets_young_objects_pile_up_before_a_collection(fresh_mirror):
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, *before[1:])
        retrieval_warm_up()
        assert gc.get_threshold() == (YOUNG_COLLECTION, *before[1:]) and YOUNG_COLLECTION > 700
    finally:
        gc.set_threshold(*before)
