"""DB-free tests of signal propagation and ranking."""
from __future__ import annotations

import math
import random

import pytest

from graph.algorithms.propagation import (
    FLOOR_MARGIN,
    Edge,
    PropagationParams,
    RankInput,
    Reach,
    WeightFloor,
    normalise_scores,
    propagate,
    rank,
)


def graph_of(pairs: list[tuple[int, int, float]], statuses: dict[int, str] | None = None, *, cut: bool = False):
    """Neighbour loader over an undirected weighted edge list; records which ids were asked for. With ``cut`` it
    leaves out the edges under the floor propagation gives it, as the graph mirror does."""
    statuses = statuses or {}
    adjacency: dict[int, list[Edge]] = {}
    for cid, (a, b, w) in enumerate(pairs, start=1):
        adjacency.setdefault(a, []).append(Edge(b, w, cid, statuses.get(b, "active")))
        adjacency.setdefault(b, []).append(Edge(a, w, cid, statuses.get(a, "active")))
    asked: list[set[int]] = []

    def load(ids, floor):
        ids = set(ids)
        asked.append(ids)
        found = {i: adjacency.get(i, []) for i in ids}
        kept = {i: Reach(len(out), [e for e in out if not cut or e.weight >= floor.at(i, len(out))])
                for i, out in found.items()}
        load.dropped += sum(r.degree - len(r.edges) for r in kept.values())
        return kept

    load.asked, load.dropped = asked, 0
    return load


PARAMS = PropagationParams(attenuation=0.8, max_hops=3, threshold=0.01, hub_degree=8)


def test_signal_reaches_a_grain_two_hops_away_with_its_path():
    acts = propagate({1: 1.0}, {1: "active"}, graph_of([(1, 2, 0.5), (2, 3, 0.5)]), PARAMS)
    assert acts[3].hops == 2
    assert acts[3].path == (1, 2, 3)
    assert acts[3].conduits == (1, 2)
    assert acts[3].origin == 1


def test_attenuation_and_conduit_weight_multiply_per_hop():
    acts = propagate({1: 1.0}, {1: "active"}, graph_of([(1, 2, 0.5), (2, 3, 0.5)]), PARAMS)
    assert acts[2].signal == pytest.approx(0.4)
    assert acts[3].signal == pytest.approx(0.16)


def test_hop_limit_holds():
    chain = graph_of([(1, 2, 0.9), (2, 3, 0.9), (3, 4, 0.9), (4, 5, 0.9)])
    params = PropagationParams(attenuation=0.9, max_hops=2, threshold=0.0001)
    acts = propagate({1: 1.0}, {1: "active"}, chain, params)
    assert 3 in acts and 4 not in acts and 5 not in acts
    assert len(chain.asked) == 2


def test_signal_below_threshold_is_pruned():
    params = PropagationParams(attenuation=0.8, max_hops=3, threshold=0.2)
    acts = propagate({1: 1.0}, {1: "active"}, graph_of([(1, 2, 0.5), (2, 3, 0.5)]), params)
    assert 2 in acts and 3 not in acts


def test_entry_signal_dominates_second_hand_signal():
    # 2 is a direct but weaker hit; 3 is only reached through the best hit.
    acts = propagate({1: 1.0, 2: 0.6}, {1: "active", 2: "active"}, graph_of([(1, 3, 0.5)]), PARAMS)
    assert acts[2].signal > acts[3].signal
    assert acts[1].signal == pytest.approx(1.0)


def test_only_relay_grains_spread_signal():
    loader = graph_of([(1, 3, 0.9), (2, 4, 0.9)])
    acts = propagate({1: 1.0, 2: 0.9}, {1: "active", 2: "active"}, loader, PARAMS, relay_from=[1])
    assert 3 in acts and 4 not in acts


def test_hubs_are_damped_by_degree():
    """A grain with more neighbours than the hub degree gives each less, yet reaches more in all (damped, not
    split); one within the hub degree gives each neighbour what a single link would."""
    def spread(neighbours: int) -> dict:
        spokes = [(1, n, 0.5) for n in range(10, 10 + neighbours)]
        return propagate({1: 1.0}, {1: "active"}, graph_of(spokes), PARAMS)

    alone, few, hub = spread(1), spread(4), spread(32)  # PARAMS' hub degree is 8
    assert few[10].signal == pytest.approx(alone[10].signal)
    assert 0 < hub[10].signal < few[10].signal
    assert sum(hub[n].signal for n in range(10, 42)) > sum(few[n].signal for n in range(10, 14))


def test_dormant_grains_relay_weakly_and_unknown_statuses_not_at_all():
    pairs = [(1, 2, 0.5), (2, 3, 0.5), (1, 4, 0.5), (4, 5, 0.5)]
    loader = graph_of(pairs, statuses={2: "dormant", 4: "quarantined"})
    acts = propagate({1: 1.0}, {1: "active"}, loader, PARAMS)
    awake = propagate({1: 1.0}, {1: "active"}, graph_of(pairs, statuses={4: "quarantined"}), PARAMS)
    assert 0 < acts[3].signal < awake[3].signal  # through a dormant grain, some signal but less
    assert acts[2].signal == pytest.approx(awake[2].signal)  # the dormant grain itself is reached as before
    assert 5 not in acts


def test_signal_from_several_paths_adds_up_without_a_cap():
    acts = propagate({1: 1.0, 2: 1.0}, {1: "active", 2: "active"}, graph_of([(1, 3, 0.5), (2, 3, 0.5)]), PARAMS)
    assert acts[3].signal == pytest.approx(0.8)


def test_rank_multiplies_signal_weight_confidence_and_recency():
    acts = propagate({1: 1.0, 2: 0.9}, {1: "active", 2: "active"}, graph_of([]), PARAMS)
    inputs = {1: RankInput(0.5, 0.5, 1.0), 2: RankInput(0.9, 0.9, 1.0)}
    ranked = rank(acts, inputs, 5)
    assert [r.activation.grain_id for r in ranked] == [2, 1]
    assert ranked[0].score == pytest.approx(0.9 * 0.9 * 0.9)


def test_rank_breaks_ties_by_direct_relevance_and_skips_unretrievable():
    acts = propagate({1: 1.0, 2: 0.5}, {1: "active", 2: "active"}, graph_of([(1, 3, 0.625)]), PARAMS)
    acts[2].signal = acts[3].signal  # equal final signal, but 2 is a direct hit
    inputs = {2: RankInput(0.5, 1, 1), 3: RankInput(0.5, 1, 1)}
    assert [r.activation.grain_id for r in rank(acts, inputs, 5)] == [2, 3]


def test_normalise_scores_makes_the_best_one():
    assert normalise_scores([(1, 4.0), (2, 1.0)]) == {1: 1.0, 2: 0.25}
    assert normalise_scores([]) == {}


def test_grains_too_weak_to_pass_signal_on_are_not_expanded():
    chain = graph_of([(1, 2, 0.5), (2, 3, 0.5), (3, 4, 0.5)])
    params = PropagationParams(attenuation=0.8, max_hops=3, threshold=0.1, max_weight=0.5)
    acts = propagate({1: 1.0}, {1: "active"}, chain, params)
    # 2 holds 0.4 and passes 0.16 to 3; 3 could pass at most 0.064 < 0.1, so its conduits are never loaded
    assert set(acts) == {1, 2, 3}
    assert chain.asked == [{1}, {2}]


@pytest.mark.parametrize("seed", range(20))
def test_a_loader_that_leaves_out_edges_under_the_floor_changes_nothing(seed):
    """Random graphs with hubs, dormant and unreachable grains: cutting at the floor gives the same activations
    (signal, paths, hops) as reading every edge, having left most edges out."""
    rng = random.Random(seed)
    pairs = [(rng.randrange(60), rng.randrange(60), rng.choice([0.05, 0.2, 0.5, rng.random()])) for _ in range(400)]
    statuses = {g: rng.choice(["active"] * 6 + ["dormant", "quarantined"]) for g in range(60)}
    entries = {g: rng.random() or 1.0 for g in rng.sample(range(60), 5)}
    params = PropagationParams(attenuation=0.85, max_hops=3, threshold=0.05, hub_degree=8)
    whole = propagate(entries, dict.fromkeys(entries, "active"), graph_of(pairs, statuses), params)
    cut = graph_of(pairs, statuses, cut=True)
    assert propagate(entries, dict.fromkeys(entries, "active"), cut, params) == whole
    assert cut.dropped > 0


def test_the_floor_sits_a_hair_under_the_weight_that_just_passes_signal_on_at_every_degree():
    """``WeightFloor.at`` (the lowest floor, raised above the hub degree) against the exact weight at which
    ``passing * damping * weight`` reaches the threshold: never above it, never more than a millionth under."""
    rng = random.Random(5)
    params = PropagationParams(threshold=0.05, hub_degree=8)
    for _ in range(2000):
        passing, degree = rng.uniform(1e-3, 1.0), rng.randint(1, 400)
        floor = WeightFloor({7: params.threshold / passing * FLOOR_MARGIN}, params.hub_degree)
        exact = params.threshold / (passing * min(1.0, math.sqrt(params.hub_degree / degree)))
        assert exact * (1 - 1e-6) <= floor.at(7, degree) <= exact
