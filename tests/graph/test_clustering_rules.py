"""Clustering, identity across runs, labels and lifecycle moves: pure functions on literal graphs."""
from __future__ import annotations

import community as python_louvain  # python-louvain, the reference implementation
import networkx as nx
import pytest

from graph.algorithms.clustering import cluster_shape, inherit_identity, internal_edges, label_terms, louvain
from graph.algorithms.lifecycle import GrainState, LifecycleRules, transition

DAY = 86400.0


def two_cliques(bridge: float = 0.1) -> tuple[list[int], list[tuple[int, int, float]]]:
    """Two 5-cliques joined by one weak edge, plus an isolated grain."""
    edges = [(a, b, 0.9) for group in ((1, 2, 3, 4, 5), (6, 7, 8, 9, 10)) for a in group for b in group if a < b]
    return list(range(1, 12)), edges + [(5, 6, bridge)]


def test_louvain_separates_two_cliques_joined_by_a_weak_edge():
    nodes, edges = two_cliques()
    found = louvain(nodes, edges, resolution=1.0, seed=7)
    assert found[:2] == [{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}]
    assert {11} in found  # isolated grains come back alone


def test_louvain_is_deterministic_for_a_seed_and_matches_the_reference_modularity():
    graph = nx.connected_caveman_graph(12, 6)
    nodes = list(graph.nodes)
    edges = [(a, b, 1.0) for a, b in graph.edges]
    first = louvain(nodes, edges, resolution=1.0, seed=3)
    assert louvain(nodes, edges, resolution=1.0, seed=3) == first
    ours = nx.community.modularity(graph, first)
    reference = python_louvain.modularity(python_louvain.best_partition(graph, random_state=3), graph)
    assert ours == pytest.approx(reference, abs=0.02)


def test_higher_resolution_gives_more_clusters():
    graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(10, 10))
    nodes, edges = list(graph.nodes), [(a, b, 1.0) for a, b in graph.edges]
    assert len(louvain(nodes, edges, resolution=4.0, seed=1)) > len(louvain(nodes, edges, resolution=0.2, seed=1))


def test_a_community_keeps_the_id_of_the_old_cluster_it_overlaps():
    previous = {1: 10, 2: 10, 3: 10, 4: 20, 5: 20, 6: 20}
    communities = [{1, 2, 3, 7}, {4, 8, 9, 10, 11, 12, 13}, {14, 15, 16}]
    # 3 of max(4, 3) shared -> keeps 10; 1 of max(7, 3) = 0.14 < 0.3 -> new; no overlap -> new.
    assert inherit_identity(communities, previous, min_overlap=0.3) == [10, None, None]


def test_one_old_cluster_is_inherited_by_one_community_only():
    previous = {g: 10 for g in range(1, 9)}
    communities = [{1, 2, 3, 4, 5}, {6, 7, 8}]
    assert inherit_identity(communities, previous, min_overlap=0.3) == [10, None]


def test_cluster_shape_counts_density_weight_and_hubs():
    members = {1, 2, 3, 4}
    edges = [(1, 2, 0.8), (1, 3, 0.6), (1, 4, 0.4), (2, 3, 0.2), (4, 9, 0.9)]
    (inside,) = internal_edges([members], edges)
    shape = cluster_shape(members, inside, hubs=2)
    assert shape.density == pytest.approx(4 / 6)
    assert shape.internal_weight == pytest.approx(0.5)
    assert shape.hubs == (1, 2)


def test_label_prefers_terms_frequent_in_the_cluster_and_rare_elsewhere():
    members = [["tomato", "greenhouse", "water"], ["tomato", "greenhouse", "soil"], ["tomato", "water", "people"]]
    doc_freq = {"tomato": 3, "greenhouse": 2, "water": 40, "soil": 1, "people": 90}
    assert label_terms(members, doc_freq, 100, count=2) == ["tomato", "greenhouse"]


RULES = LifecycleRules(dormant_weight=0.1, dormant_after_seconds=30 * DAY, archive_after_seconds=90 * DAY,
                       confidence_floor=0.2, quarantine_min_rated=10, quarantine_max_usefulness=0.2)


def state(**changes: object) -> GrainState:
    base = dict(status="active", weight=0.5, confidence=0.7, idle_seconds=DAY, in_status_seconds=DAY,
                useful=0, not_useful=0)
    return GrainState(**{**base, **changes})


@pytest.mark.parametrize("changes,expected", [
    ({}, None),
    ({"weight": 0.09}, "dormant"),
    ({"idle_seconds": 31 * DAY}, "dormant"),
    ({"status": "dormant", "idle_seconds": 31 * DAY, "in_status_seconds": 31 * DAY}, None),
    ({"status": "dormant", "idle_seconds": 200 * DAY, "in_status_seconds": 91 * DAY}, "archived"),
    ({"status": "dormant", "idle_seconds": 10 * DAY, "in_status_seconds": 200 * DAY}, None),
    ({"confidence": 0.15}, "quarantined"),
    ({"useful": 1, "not_useful": 9}, "quarantined"),
    ({"useful": 1, "not_useful": 7}, None),
    ({"status": "archived", "confidence": 0.1}, None),
    ({"status": "quarantined", "weight": 0.01}, None),
])
def test_lifecycle_transitions(changes, expected):
    move = transition(state(**changes), RULES)
    assert (move[0] if move else None) == expected
    if move:
        assert move[1]  # every move says why
