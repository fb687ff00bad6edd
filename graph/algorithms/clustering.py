"""Louvain clustering of the grain graph, cluster identity across runs, and cluster labels (pure, no Django).

Louvain runs in igraph's C implementation (``community_multilevel``): the
pure-Python implementations take minutes on 50,000 grains, igraph about a
second on 100,000. The random generator is seeded, so the same graph gives the
same clusters.
"""
from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import igraph

Edge = tuple[int, int, float]  # grain a, grain b, weight


def louvain(nodes: Sequence[int], edges: Iterable[Edge], *, resolution: float, seed: int) -> list[set[int]]:
    """Communities of ``nodes`` maximising weighted modularity at ``resolution``, largest first.

    Parallel edges between two nodes add up; edges to unknown nodes and
    self-loops are ignored. Isolated nodes come back as singletons.
    Cost: about O(E log V), in C.
    """
    index = {gid: i for i, gid in enumerate(nodes)}
    summed: dict[tuple[int, int], float] = defaultdict(float)
    for a, b, w in edges:
        ia, ib = index.get(a), index.get(b)
        if ia is None or ib is None or ia == ib or w <= 0:
            continue
        summed[(ia, ib) if ia < ib else (ib, ia)] += w
    graph = igraph.Graph(n=len(nodes), edges=list(summed))
    graph.es["weight"] = list(summed.values())
    igraph.set_random_number_generator(random.Random(seed))
    try:
        parts = graph.community_multilevel(weights="weight" if summed else None, resolution=resolution)
    finally:
        igraph.set_random_number_generator(random)
    communities = [{nodes[i] for i in part} for part in parts]
    return sorted(communities, key=lambda c: (-len(c), min(c)))


def inherit_identity(communities: Sequence[set[int]], previous: Mapping[int, int], *,
                     min_overlap: float) -> list[int | None]:
    """For each community, the id of the old cluster it continues, or None for a new one.

    ``previous`` maps grain -> old cluster id. A community continues the old
    cluster it shares the most members with when the shared members are at
    least ``min_overlap`` of the larger of the two; each old id is given to
    one community at most, the best overlaps first.
    """
    old_sizes = Counter(previous.values())
    candidates = []
    for i, members in enumerate(communities):
        shared = Counter(previous[g] for g in members if g in previous)
        for old_id, count in shared.items():
            overlap = count / max(len(members), old_sizes[old_id])
            if overlap >= min_overlap:
                candidates.append((overlap, count, -i, old_id))
    result: list[int | None] = [None] * len(communities)
    taken: set[int] = set()
    for _overlap, _count, neg_i, old_id in sorted(candidates, reverse=True):
        i = -neg_i
        if result[i] is None and old_id not in taken:
            result[i] = old_id
            taken.add(old_id)
    return result


def internal_edges(communities: Sequence[set[int]], edges: Iterable[Edge]) -> list[list[Edge]]:
    """The edges inside each community (both ends in it), in one pass over ``edges``."""
    where = {g: i for i, members in enumerate(communities) for g in members}
    inside: list[list[Edge]] = [[] for _ in communities]
    for edge in edges:
        i = where.get(edge[0])
        if i is not None and where.get(edge[1]) == i:
            inside[i].append(edge)
    return inside


@dataclass(frozen=True)
class ClusterShape:
    density: float          # internal edges / possible pairs
    internal_weight: float  # mean weight of internal edges
    hubs: tuple[int, ...]   # members with the highest internal weighted degree


def cluster_shape(members: set[int], edges: Iterable[Edge], *, hubs: int) -> ClusterShape:
    """Density, mean internal weight and hubs of one community. Cost: O(edges given)."""
    degree: dict[int, float] = defaultdict(float)
    pairs: set[tuple[int, int]] = set()
    total = 0.0
    for a, b, w in edges:
        if a in members and b in members and a != b:
            pairs.add((a, b) if a < b else (b, a))
            total += w
            degree[a] += w
            degree[b] += w
    n = len(members)
    possible = n * (n - 1) / 2
    ranked = sorted(members, key=lambda g: (-degree.get(g, 0.0), g))
    return ClusterShape(
        density=len(pairs) / possible if possible else 0.0,
        internal_weight=total / len(pairs) if pairs else 0.0,
        hubs=tuple(ranked[:hubs]),
    )


def label_terms(member_terms: Sequence[Sequence[str]], doc_freq: Mapping[str, int], total_docs: int, *,
                count: int) -> list[str]:
    """The ``count`` most distinctive terms of a cluster: frequent in it, rare elsewhere (tf-idf).

    ``member_terms`` are the distinct terms of each member, ``doc_freq`` how
    many of ``total_docs`` grains hold each term. Ties break alphabetically.
    """
    tf = Counter(t for terms in member_terms for t in set(terms))
    scored = []
    for term, n in tf.items():
        if n < 2 and len(member_terms) > 2:
            continue  # a word of one member says nothing about the cluster
        idf = math.log((1 + total_docs) / (1 + doc_freq.get(term, 0)))
        scored.append((-(n * idf), term))
    return [term for _, term in sorted(scored)[:count]]
