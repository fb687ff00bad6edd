"""The lifecycle over simulated months: dormant, archived, quarantined, and back by use; tasks called directly."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest

from grains.models import ActivityEvent, ConfidenceEvent, Grain
from graph.models import Cluster
from graph.services import cluster_rebuild, decay_sweep, feedback_record, grain_retrieve
from memory.store import grain_store, grain_store_batch
from memory.tasks import cluster_rebuild_task, decay_sweep_task, epistemic_pass_task

pytestmark = pytest.mark.django_db


def status_of(*grains: Grain) -> list[str]:
    return [Grain.objects.get(pk=g.pk).status for g in grains]


def test_months_of_disuse_move_grains_dormant_then_archived_and_one_retrieval_brings_one_back(t0):
    lamp = grain_store(content="The lamp in the hall needs a new bulb", now=t0).grain
    bike = grain_store(content="Theo keeps his bike in the cellar", now=t0).grain
    decay_sweep(now=t0 + timedelta(days=40))
    assert status_of(lamp, bike) == ["dormant", "dormant"]
    decay_sweep(now=t0 + timedelta(days=100))
    assert status_of(lamp, bike) == ["dormant", "dormant"], "archived only after ARCHIVE_AFTER_DAYS of dormancy"
    swept = decay_sweep(now=t0 + timedelta(days=140))
    assert status_of(lamp, bike) == ["archived", "archived"] and swept.moved == {"archived": 2}
    assert Grain.objects.count() == 2, "nothing is deleted by decay"
    found = grain_retrieve(query="where is Theo's bike", now=t0 + timedelta(days=141))
    assert [g.id for g in found.grains] == [bike.pk]
    assert status_of(lamp, bike) == ["archived", "active"]
    moves = [(e.kind, e.payload["reason"]) for e in ActivityEvent.objects.filter(payload__grain_id=bike.pk)
             .exclude(kind="grains.grain_stored").order_by("pk")]
    assert [kind for kind, _ in moves] == ["grains.grain_demoted", "grains.grain_archived", "grains.grain_promoted"]
    demoted = re.fullmatch(r"weight (0\.\d+) below DORMANT_WEIGHT 0\.1", moves[0][1])
    assert demoted and float(demoted[1]) < 0.1, moves[0]  # the reason names the weight that fell short
    assert moves[1:] == [("grains.grain_archived", "dormant for 100 days"),
                         ("grains.grain_promoted", "retrieved from the archive")]


def test_archived_grains_are_searched_only_when_live_ones_fall_short(t0, flux_settings):
    flux_settings(EPISTEMIC_ENABLED=False)
    old = grain_store(content="Mira's locker code is 8812", now=t0).grain
    Grain.objects.filter(pk=old.pk).update(status="archived")
    grain_store_batch(items=[{"content": f"Mira's locker note {i}"} for i in range(6)], now=t0)
    assert old.pk not in [g.id for g in grain_retrieve(query="Mira locker", limit=5, now=t0).grains]
    flux_settings(ARCHIVE_SEARCH=False)
    assert old.pk not in [g.id for g in grain_retrieve(query="Mira locker code", limit=10, now=t0).grains]
    flux_settings(ARCHIVE_SEARCH=True)
    assert old.pk in [g.id for g in grain_retrieve(query="Mira locker code", limit=10, now=t0).grains]


def test_a_grain_rated_useless_again_and_again_is_quarantined_by_the_sweep(t0):
    grain = grain_store(content="Generic remark about the weather today", now=t0).grain
    for i in range(10):
        found = grain_retrieve(query="weather remark", caller=f"rater{i}:chat", enforce_feedback=False, now=t0)
        feedback_record(trace_id=found.trace_id, grain_id=grain.pk, useful=i == 0, caller=f"rater{i}:chat", now=t0)
    decay_sweep(now=t0 + timedelta(hours=1))
    assert status_of(grain) == ["quarantined"]
    assert ActivityEvent.objects.get(kind="grains.grain_quarantined").payload["reason"] == "useful in 1 of 10 ratings"
    assert grain_retrieve(query="weather remark", now=t0).grains == []
    assert [g.id for g in grain_retrieve(query="weather remark", include_quarantined=True, now=t0).grains] == [grain.pk]


def test_confidence_follows_feedback_and_drifts_down_with_age(t0):
    grain = grain_store(content="The ferry leaves at 7:40", provenance="user_stated", now=t0).grain
    found = grain_retrieve(query="ferry", now=t0)
    feedback_record(trace_id=found.trace_id, grain_id=grain.pk, useful=True, now=t0)
    assert Grain.objects.get(pk=grain.pk).confidence == pytest.approx(0.92)
    decay_sweep(now=t0 + timedelta(days=180))  # one half-life: halfway from 0.92 down to the neutral 0.5
    assert Grain.objects.get(pk=grain.pk).confidence == pytest.approx(0.71)
    reasons = list(ConfidenceEvent.objects.filter(grain=grain).order_by("pk").values_list("reason", flat=True))
    assert reasons == ["prior:user_stated", "useful", "aged"]


def test_confidence_below_the_floor_quarantines_at_once(t0, flux_settings):
    flux_settings(CONFIDENCE_NOT_USEFUL_STEP=0.2)
    grain = grain_store(content="Maybe the key is under the mat", provenance="ai_inferred", now=t0).grain
    for i in range(2):
        found = grain_retrieve(query="key under the mat", caller=f"r{i}:chat", now=t0)
        feedback_record(trace_id=found.trace_id, grain_id=grain.pk, useful=False, caller=f"r{i}:chat", now=t0)
    assert status_of(grain) == ["quarantined"]  # 0.5 -> 0.3 -> 0.1 < CONFIDENCE_FLOOR


def test_tasks_call_their_services_and_are_safe_to_run_twice(t0):
    grain_store_batch(items=[{"content": c, "context": "c1"} for c in (
        "Ravi bakes sourdough bread", "Ravi feeds the sourdough starter daily", "Ravi sells bread at the market",
        "Uma repairs old radios", "Uma collects radio valves", "Uma sells radios at the market")])
    first = cluster_rebuild_task()
    clusters = list(Cluster.objects.order_by("pk").values_list("pk", "size", "label"))
    second = cluster_rebuild_task()
    assert first["clusters"] == second["clusters"] == len(clusters) >= 1
    assert second["created"] == 0 and second["kept"] == first["clusters"]
    assert list(Cluster.objects.order_by("pk").values_list("pk", "size", "label")) == clusters
    assert decay_sweep_task()["examined"] == 6 and decay_sweep_task()["moved"] == {}
    done = epistemic_pass_task()
    assert done["examined"] == 6 and epistemic_pass_task()["examined"] == 0, "the pass resumes where it stopped"


def test_clusters_are_stored_with_members_label_and_hubs_and_keep_their_identity(t0):
    grain_store_batch(items=[{"content": c, "context": "garden"} for c in (
        "Lena grows tomatoes in the greenhouse", "Lena waters the tomatoes each morning",
        "The greenhouse tomatoes ripen in July", "Lena gives tomatoes to her neighbours")], now=t0)
    result = cluster_rebuild(now=t0)
    assert result.clusters == 1 and result.clustered == 4
    cluster = Cluster.objects.get()
    assert cluster.size == Grain.objects.filter(cluster_id=cluster.pk).count() == 4
    assert "tomatoes" in cluster.terms and cluster.label.startswith(cluster.terms[0])
    assert 0 < cluster.density <= 1 and len(cluster.hubs) == 3
    again = cluster_rebuild(now=t0)
    assert (again.created, again.kept, Cluster.objects.get().pk) == (0, 1, cluster.pk)
    assert ActivityEvent.objects.filter(kind="graph.clusters_rebuilt").count() == 2


def test_cluster_hubs_are_weak_neighbours_in_retrieval(t0, flux_settings):
    flux_settings(STORE_LINK_NEIGHBOURS=0, EPISTEMIC_ENABLED=False)
    member = grain_store(content="Quentin restores vintage typewriters", now=t0).grain
    hub = grain_store(content="A ribbon spool fits most old machines", now=t0).grain
    cluster = Cluster.objects.create(label="typewriters", size=2, hubs=[member.pk, hub.pk], created_at=t0,
                                     updated_at=t0)
    Grain.objects.filter(pk__in=[member.pk, hub.pk]).update(cluster_id=cluster.pk)
    flux_settings(CLUSTER_NEIGHBOUR_WEIGHT=0.0)
    assert [g.id for g in grain_retrieve(query="Quentin typewriters", now=t0).grains] == [member.pk]
    flux_settings(CLUSTER_NEIGHBOUR_WEIGHT=0.5)
    found = grain_retrieve(query="Quentin typewriters", now=t0).grains
    assert [g.id for g in found] == [member.pk, hub.pk]
    assert (found[1].hops, found[1].path) == (1, [member.pk, hub.pk])
