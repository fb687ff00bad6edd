"""What the dashboard reads: the graph by level of detail, search without side effects, the activity log as
pages draw it, and its data endpoints' errors."""
from __future__ import annotations

import pytest

from core.errors import InvalidInput, NotFound
from dashboard import selectors
from grains.models import Grain
from graph.models import Conduit, Trace
from graph.services import cluster_rebuild, grain_retrieve
from memory.store import grain_store

pytestmark = pytest.mark.django_db

TOPICS = {
    "boat": ["The boat {} needs new sails before the regatta", "Sails of the boat {} are stored in the loft",
             "The regatta boat {} has a blue hull", "Boat {} sails best with the small jib"],
    "oven": ["The bakery oven {} runs at 220 degrees for rye bread", "Rye bread from oven {} needs a long proof",
             "Oven {} in the bakery was serviced in May", "The bakery oven {} bakes sourdough rye bread"],
}


@pytest.fixture
def stored(t0):
    """Two topics of four grains, each stored in its own context (so each is linked into a clump)."""
    return {topic: [grain_store(content=text.format(n), context=topic, now=t0).grain for n, text in enumerate(texts)]
            for topic, texts in TOPICS.items()}


def test_a_small_graph_is_served_whole(stored):
    gone = stored["oven"][0]
    Grain.objects.filter(pk=gone.pk).update(status="archived")
    data = selectors.graph_overview()
    assert data["mode"] == "grains" and data["grains"] == 7
    keys = {n["key"] for n in data["nodes"]}
    assert keys == {f"g{g.pk}" for gs in stored.values() for g in gs} - {f"g{gone.pk}"}
    assert all(n["role"] == "grain" and n["label"] for n in data["nodes"])
    assert data["edges"] and all(e["source"] in keys and e["target"] in keys for e in data["edges"])
    shown = Conduit.objects.exclude(source=gone).exclude(target=gone).count()
    assert len(data["edges"]) == shown


def test_a_large_graph_is_served_clusters_first_then_members(stored, flux_settings, t0):
    result = cluster_rebuild(now=t0)
    assert result.clusters >= 2
    flux_settings(DASHBOARD_FULL_GRAPH_MAX=3)
    data = selectors.graph_overview()
    assert data["mode"] == "clusters" and all(n["role"] == "cluster" for n in data["nodes"])
    assert sum(n["members"] for n in data["nodes"]) == 8
    boat = Grain.objects.get(pk=stored["boat"][0].pk).cluster_id
    members = selectors.cluster_graph(boat)
    in_cluster = list(Grain.objects.filter(cluster_id=boat).order_by("-weight", "id").values_list("id", flat=True))
    assert members["members"] == len(in_cluster) == 4
    assert members["shown"] == 3 and [n["id"] for n in members["nodes"]] == in_cluster[:3], "the heaviest, capped"
    assert all(e["source"].startswith("g") for e in members["edges"])
    with pytest.raises(NotFound, match="cluster 999 has no grains"):
        selectors.cluster_graph(999)


def test_grains_stored_since_clustering_are_cluster_zero(stored, t0):
    cluster_rebuild(now=t0)
    late = grain_store(content="The lighthouse keeper winds the clock at dusk", now=t0).grain
    zero = selectors.cluster_graph(selectors.UNCLUSTERED)
    assert f"g{late.pk}" in {n["key"] for n in zero["nodes"]}


def test_search_finds_grains_and_records_nothing(stored):
    traces = Trace.objects.count()
    hits = selectors.grain_search("regatta")
    assert {h["id"] for h in hits} == {stored["boat"][0].pk, stored["boat"][2].pk}
    assert Trace.objects.count() == traces
    with pytest.raises(InvalidInput, match="'q' is empty"):
        selectors.grain_search("  ")


def test_events_carry_what_a_page_draws(stored, t0):
    last = selectors.last_event_id()
    found = grain_retrieve(query="which oven bakes rye bread", now=t0)
    later = grain_store(content="The rye starter lives in the bakery fridge", now=t0).grain
    events = selectors.events_after(last)
    assert [e["id"] for e in events] == sorted(e["id"] for e in events) and events[0]["id"] > last
    beam = next(e for e in events if e["kind"] == "graph.signal_propagated")
    assert beam["trace"]["query"] == "which oven bakes rye bread"
    assert {i["grain_id"] for i in beam["trace"]["items"]} >= {g.id for g in found.grains}
    assert any(i["hops"] == 0 for i in beam["trace"]["items"]), "entry points are lit with hops 0"
    new = next(e for e in events if e["kind"] == "grains.grain_stored")
    assert new["grain"] == {"id": later.pk, "key": f"g{later.pk}", "label": later.content, "status": "active",
                            "weight": round(later.weight, 4), "cluster": selectors.UNCLUSTERED, "level": later.level}
    assert selectors.events_after(selectors.last_event_id()) == []
    assert [e["id"] for e in selectors.events_before(events[-1]["id"], limit=1)] == [events[-2]["id"]]
    assert [e["id"] for e in selectors.events_before(None, limit=2)] == [e["id"] for e in events[-2:]]


@pytest.mark.urls("dashboard.urls")
@pytest.mark.parametrize("url,status,text", [
    ("/api/search?q=", 400, "'q' is empty"),
    ("/api/activity?after=soon", 400, "'after' must be a whole number"),
    ("/api/activity?limit=0", 400, "'limit' must be between 1"),
    ("/api/activity?after=1_0", 400, "'after' must be a whole number"),
    ("/api/activity?limit=%EF%BC%95", 400, "'limit' must be a whole number"),
    ("/api/activity?after=1&before=2", 400, "not both"),
    ("/api/activity?after=9223372036854775808", 400, "'after' must be at most 9223372036854775807"),
    ("/api/graph/clusters/999", 404, "cluster 999 has no grains"),
    ("/api/grains/999999", 404, "999999"),
    ("/nowhere", 404, "the dashboard has no page at /nowhere"),
])
def test_data_endpoints_answer_bad_requests_with_reasons(client, url, status, text):
    response = client.get(url)
    assert response.status_code == status and text in response.json()["error"]["message"]


@pytest.mark.urls("dashboard.urls")
def test_the_data_is_never_kept_by_a_cache(client, stored):
    """The memory's contents: a browser or a proxy between a shared dashboard and its viewer kept them."""
    for url in (f"/api/grains/{stored['boat'][0].pk}", "/api/graph", "/api/search?q=regatta", "/api/grains/999999"):
        response = client.get(url)
        assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"], url
