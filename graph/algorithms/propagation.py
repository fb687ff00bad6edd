"""Signal propagation over the grain graph, and ranking (pure, no Django).

The query's own evidence stays in the score: an entry grain keeps its match
signal, and what reaches a grain second-hand is attenuated per hop, scaled by
conduit weight and damped at hubs. Signal is summed, never capped, so grains
do not tie at a ceiling; ties break by direct relevance, then by id.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple


class Edge(NamedTuple):
    """A traversable conduit seen from one end (a tuple: thousands are made per retrieval)."""

    target: int
    weight: float
    conduit_id: int
    target_status: str


@dataclass(frozen=True)
class PropagationParams:
    attenuation: float = 0.85
    max_hops: int = 3
    threshold: float = 0.05
    hub_degree: int = 8
    max_frontier: int = 256
    max_weight: float = 0.95
    relay: Mapping[str, float] = field(default_factory=lambda: {"active": 1.0, "dormant": 0.3})

    def can_pass_on(self, signal: float, status: str) -> bool:
        """Whether a grain holding ``signal`` could give any neighbour a contribution above threshold."""
        return signal * self.attenuation * self.max_weight * self.relay.get(status, 0.0) >= self.threshold


@dataclass(slots=True)
class Activation:
    grain_id: int
    signal: float
    entry: float
    best: float
    hops: int
    path: tuple[int, ...]
    conduits: tuple[int, ...]

    @property
    def origin(self) -> int:
        return self.path[0]


class Reach(NamedTuple):
    """A grain's traversable conduits as propagation reads them: how many there are (hub damping counts every
    one) and the edges, or those of them whose weight is not under the loader's ``floor`` for the grain."""

    degree: int
    edges: Sequence[Edge]


@dataclass(frozen=True, slots=True)
class WeightFloor:
    """Per relaying grain, the weight under which one of its edges cannot pass signal on: a loader may leave such
    edges out (weights only decay, so a stored weight under it is a decayed weight under it). ``lowest`` is the
    floor of a grain of at most ``hub_degree`` conduits; hub damping lowers what passes, so the floor rises with
    the degree above it and is never under ``lowest``. No signal goes back to the grains of ``relayed`` (they
    relayed on an earlier hop): a loader may leave out the edges to them too."""

    lowest: Mapping[int, float]
    hub_degree: int
    relayed: Collection[int] = frozenset()

    def at(self, source: int, degree: int) -> float:
        return self.lowest[source] / _damping(self.hub_degree, degree)


NeighbourLoader = Callable[[Iterable[int], WeightFloor], Mapping[int, Reach]]


def reach_all(edges: Mapping[int, Sequence[Edge]]) -> dict[int, Reach]:
    """Every edge of each grain, for loaders that do not cut at the floor."""
    return {gid: Reach(len(out), out) for gid, out in edges.items()}


def propagate(
    entries: Mapping[int, float],
    entry_status: Mapping[int, str],
    neighbours: NeighbourLoader,
    params: PropagationParams,
    relay_from: Iterable[int] | None = None,
) -> dict[int, Activation]:
    """Spread entry signal along conduits for at most ``max_hops`` hops.

    ``entries`` maps grain id to its match signal (the best is 1.0); only the
    grains in ``relay_from`` (default: all entries) start relaying. The signal
    moves outward as a wave: each grain relays once, at the hop it is first
    reached, and never receives from a later wave, so nothing echoes back
    along the conduit it came by; only on the first hop do entry grains pass
    signal to each other (two linked direct hits corroborate each other). Each hop calls ``neighbours`` once with the
    relaying grains. A contribution is ``signal * weight * attenuation *
    relay(status) * hub_damping`` and is dropped below ``threshold`` (the
    loader is told, per grain, the conduit weight under which that happens,
    and may leave those conduits out: most of them, in a large graph; and
    the grains that relayed on an earlier hop, whose conduits back it may skip). Each
    grain remembers the path of its single strongest contribution. Weak links
    (``conduit_id < 0``, e.g. to cluster hubs) pass signal to their target
    but do not make it relay: they reach a grain, not a neighbourhood.
    Cost: O(max_hops * max_frontier * degree).
    """
    acts = {
        gid: Activation(gid, signal, signal, signal, 0, (gid,), ()) for gid, signal in entries.items()
    }
    status = dict(entry_status)
    starters = entries.keys() if relay_from is None else relay_from
    frontier = {gid: entries[gid] for gid in starters if gid in entries}
    relayed = set(frontier)
    for hop in range(1, params.max_hops + 1):
        # Exact pruning: a grain that cannot pass on enough signal need not have its conduits loaded.
        frontier = {g: s for g, s in frontier.items() if params.can_pass_on(s, status.get(g, "active"))}
        if not frontier:
            break
        passing = {g: s * params.attenuation * params.relay.get(status.get(g, "active"), 0.0)
                   for g, s in frontier.items()}
        back = relayed if hop > 1 else ()  # the grains no signal goes back to: those that relayed on an earlier hop
        floor = WeightFloor({g: params.threshold / p * FLOOR_MARGIN if p > 0 else math.inf
                             for g, p in passing.items()}, params.hub_degree, back)
        edges = neighbours(frontier.keys(), floor)
        deltas: dict[int, float] = {}
        relaying: dict[int, float] = {}
        threshold = params.threshold
        for source in frontier:
            found = edges.get(source)
            if not found or not found.edges:
                continue
            base = passing[source] * _damping(params.hub_degree, found.degree)
            came = acts[source]
            # The loop every edge a retrieval follows runs: the edge unpacked, the path recorded inline.
            for target, weight, conduit_id, target_status in found.edges:
                delta = base * weight
                if delta < threshold or target == source or target in back:
                    continue
                deltas[target] = deltas.get(target, 0.0) + delta
                if conduit_id > 0:
                    relaying[target] = relaying.get(target, 0.0) + delta
                status.setdefault(target, target_status)
                current = acts.get(target)  # its strongest contribution so far, and the path it came by
                if current is None:
                    acts[target] = Activation(target, 0.0, 0.0, delta, hop, came.path + (target,),
                                              came.conduits + (conduit_id,))
                elif delta > current.best and target not in came.path:
                    current.best, current.hops = delta, hop
                    current.path, current.conduits = came.path + (target,), came.conduits + (conduit_id,)
        frontier = dict(heapq.nlargest(params.max_frontier, relaying.items(), key=lambda kv: kv[1]))
        relayed.update(frontier)
        for gid, delta in deltas.items():
            acts[gid].signal += delta
    return acts


FLOOR_MARGIN = 1 - 1e-9  # the floor told to loaders sits a hair under the exact one: rounding never drops an edge


def _damping(hub_degree: int, degree: int) -> float:
    return min(1.0, math.sqrt(hub_degree / degree)) if degree else 1.0


@dataclass(slots=True)  # not frozen: one is made for every grain a retrieval reaches, three times faster so
class RankInput:
    weight: float
    confidence: float
    recency: float
    superseded_by: int | None = None  # the live grain that supersedes this one, if any
    cluster_id: int | None = None
    level: int = 0  # above 0: a dream's abstraction
    speaker: str | None = None  # who speaks in the grain ("Ana: ..."), if anyone


@dataclass(frozen=True)
class Ranked:
    activation: Activation
    score: float


def rank(acts: Mapping[int, Activation], inputs: Mapping[int, RankInput], limit: int,
         superseded_factor: float = 0.9, factors: Mapping[int, float] | None = None) -> list[Ranked]:
    """Top ``limit`` grains by signal x weight x confidence x recency (x ``factors``, when given).

    Grains missing from ``inputs`` (not retrievable) are skipped. A superseded
    grain hands its score to its successor when that was reached too, and
    ranks at most ``superseded_factor`` of the successor's score: the current
    statement answers first, the outdated one right below it. Ties break by
    the grain's own match signal, then by the newer id.
    """
    scores = {}
    for gid, act in acts.items():
        inp = inputs.get(gid)
        if inp is not None:
            scores[gid] = act.signal * inp.weight * inp.confidence * inp.recency
            if factors is not None:
                scores[gid] *= factors.get(gid, 1.0)
    replaced = {gid: inputs[gid].superseded_by for gid in scores if inputs[gid].superseded_by in scores}
    for gid, successor in replaced.items():
        scores[successor] = max(scores[successor], scores[gid])
    for gid, successor in replaced.items():
        scores[gid] = min(scores[gid], scores[successor] * superseded_factor)
    top = heapq.nlargest(limit, scores.items(), key=lambda kv: (kv[1], acts[kv[0]].entry, kv[0]))
    return [Ranked(acts[gid], score) for gid, score in top]


def normalise_scores(hits: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scale match scores (higher is better, all > 0) so the best is 1.0."""
    if not hits:
        return {}
    best = max(score for _, score in hits)
    if best <= 0:
        return {gid: 1.0 for gid, _ in hits}
    return {gid: score / best for gid, score in hits}
