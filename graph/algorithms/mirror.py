"""An in-memory copy of what retrieval reads of the graph (pure, no Django).

Retrieval reads, for a few hundred grains, their conduits with decayed
weights and their rank inputs; through SQL that is a query per hop and
thousands of rows turned into Python objects each time. The mirror keeps the
same facts in memory (per grain: its rank fields; per conduit: its ends,
weight, stamps, kind and direction; per grain its conduits, packed; per
cluster its hubs) and answers the same questions as ``graph.selectors`` does
with the same results: ``neighbours``, ``rank_inputs``, ``related``
(contradictions, abstractions' sources), ``hubs``. Lazy decay is computed from
the stamps, as the SQL path does. It is kept current by ``put_*`` and
``drop_*`` of grains, conduits and clusters. Every method holds the mirror's
lock: one thread may follow the database's changes while others read.
"""
from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass

from graph.algorithms.decay import DecayPolicy, recency_factor
from graph.algorithms.propagation import Edge, RankInput, Reach, WeightFloor


@dataclass(frozen=True, slots=True)
class GrainRow:
    status: str
    tier: str
    weight: float
    confidence: float
    decayed_at: float  # epoch seconds
    accessed_at: float
    superseded_by: int | None
    cluster_id: int | None
    level: int
    speaker: str | None

    def rank_input(self, policy: DecayPolicy, now: float, recency_half_life: float,
                   recency_floor: float) -> RankInput:
        """What ranking reads of the grain at ``now``: its decayed weight, confidence and recency (arguments and
        fields by position: one is made for every grain a retrieval reaches)."""
        return RankInput(policy.grain_weight(self.weight, self.tier, self.decayed_at, now), self.confidence,
                         recency_factor(now - self.accessed_at, recency_half_life, recency_floor),
                         self.superseded_by, self.cluster_id, self.level, self.speaker)


@dataclass(frozen=True, slots=True)
class ConduitRow:
    source: int
    target: int
    weight: float
    created_at: float  # epoch seconds
    decayed_at: float
    directed: bool
    kind: str


class GraphMirror:
    def __init__(self) -> None:
        self.grains: dict[int, GrainRow] = {}
        self.conduits: dict[int, ConduitRow] = {}
        # Per grain, the conduits at either end of it in the order they were put (the same order in every
        # process), packed so that they lie side by side in memory: at 1,000,000 grains, following an object per
        # conduit and per grain costs a cache miss at each step. (other end, conduit id, flags) triples, flags
        # being SENDS | SOURCE | kind code << 2, and (weight, created, decayed) triples. Beside them each grain's
        # status as a code, by grain id (0: no such grain).
        self._incident: dict[int, tuple[array, array]] = {}
        # By grain id, the stored weight of its heaviest conduit that passes signal on from it (-inf: none):
        # propagation skips a grain whose floor is over it without walking its conduits (most of a large graph's,
        # at the last hops). Packed like the statuses: 8 bytes a grain.
        self._heaviest = array("d")
        self._hubs: dict[int, tuple[int, ...]] = {}  # by cluster id, its hubs
        self._status = bytearray()
        self._statuses = _Codes()
        self._kinds = _Codes()
        self._lock = threading.RLock()

    def put_grain(self, gid: int, row: GrainRow) -> None:
        with self._lock:
            self.grains[gid] = row
            if gid >= len(self._status):
                self._status.extend(bytes(_room(self._status, gid)))
            self._status[gid] = self._statuses.code(row.status)

    def drop_grain(self, gid: int) -> None:
        with self._lock:
            self.grains.pop(gid, None)
            if gid < len(self._status):
                self._status[gid] = 0

    def put_conduit(self, cid: int, row: ConduitRow) -> None:
        with self._lock:
            if cid in self.conduits:  # replaced: a load puts millions that are not
                self.drop_conduit(cid)
            self.conduits[cid] = row
            kind = self._kinds.code(row.kind) << 2
            stamps = (row.weight, row.created_at, row.decayed_at)
            ends = ((row.source, row.target, SENDS | SOURCE | kind), (row.target, row.source,
                                                                    (0 if row.directed else SENDS) | kind))
            for here, there, flags in ends[:1] if row.source == row.target else ends:  # a loop is one conduit
                packed = self._incident.get(here)
                if packed is None:
                    packed = self._incident[here] = (array("q"), array("d"))
                ids, values = packed
                ids.extend((there, cid, flags))
                values.extend(stamps)
                if flags & SENDS:
                    heaviest = self._heaviest
                    if here >= len(heaviest):
                        heaviest.extend([-math.inf] * _room(heaviest, here))
                    if row.weight > heaviest[here]:
                        heaviest[here] = row.weight

    def drop_conduit(self, cid: int) -> None:
        with self._lock:
            row = self.conduits.pop(cid, None)
            if row is None:
                return
            for end in {row.source, row.target}:
                ids, values = self._incident[end]
                k = ids[1::3].index(cid)
                del ids[3 * k: 3 * k + 3], values[3 * k: 3 * k + 3]
                if not ids:
                    del self._incident[end]
                if end < len(self._heaviest) and self._heaviest[end] == row.weight:  # it may have been the heaviest
                    self._heaviest[end] = max((w for w, flags in zip(values[::3], ids[2::3], strict=True)
                                               if flags & SENDS), default=-math.inf)

    def put_cluster(self, cid: int, hubs: tuple[int, ...]) -> None:
        with self._lock:
            self._hubs[cid] = hubs

    def drop_cluster(self, cid: int) -> None:
        with self._lock:
            self._hubs.pop(cid, None)

    def hubs(self, clusters: Iterable[int]) -> dict[int, tuple[int, ...]]:
        """What ``graph.selectors.cluster_hubs`` holds, for ``clusters``: each one's hubs (those that exist)."""
        with self._lock:
            return {cid: self._hubs[cid] for cid in clusters if cid in self._hubs}

    def touched(self, ids: Iterable[int], now: float) -> None:
        """Grains just returned by a retrieval of this process: accessed ``now``."""
        with self._lock:
            for gid in ids:
                row = self.grains.get(gid)
                if row is not None:
                    self.grains[gid] = GrainRow(row.status, row.tier, row.weight, row.confidence, row.decayed_at, now,
                                                row.superseded_by, row.cluster_id, row.level, row.speaker)

    def neighbours(self, ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy,
                   now: float) -> dict[int, list[Edge]]:
        """What ``graph.selectors.conduit_neighbours`` answers: traversable conduits out of ``ids`` (undirected
        ones both ways, directed ones source -> target) to grains whose status is in ``statuses``."""
        return {gid: list(found.edges) for gid, found in
                self.reach(ids, None, statuses=statuses, policy=policy, now=now).items()}

    def reach(self, ids: Iterable[int], floor: WeightFloor | None, *, statuses: Sequence[str], policy: DecayPolicy,
              now: float) -> dict[int, Reach]:
        """For propagation: the traversable conduits of each of ``ids`` (as ``neighbours``), counted, and of them
        the edges, decayed, whose weight is not under ``floor.at(grain, count)`` and that lead to none of
        ``floor.relayed`` (all without a floor). A grain none of whose conduits can be over its floor is left
        out, its conduits not walked."""
        with self._lock:
            out: dict[int, Reach] = {}
            status, names, known = self._status, self._statuses.names, len(self._status)
            heaviest, weighed = self._heaviest, len(self._heaviest)
            allowed = self._allowed(statuses)
            weight_floor, half_life, grace = policy.floor, policy.conduit_half_life, policy.conduit_grace
            hub, relayed = (math.inf, ()) if floor is None else (floor.hub_degree, floor.relayed)
            new = tuple.__new__
            for here in ids:
                packed = self._incident.get(here)
                # no floor is under the lowest: only the conduits not under it are looked at again, and none at all
                # when the heaviest is under it (or none sends: no degree to count)
                loose = -math.inf if floor is None else floor.lowest[here]
                if packed is None or here >= weighed or heaviest[here] < loose:
                    continue
                ends, values = iter(packed[0]), iter(packed[1])  # zip takes three of each in turn, copying none
                degree, found = 0, []
                for there, cid, flags, weight, created, decayed in zip(ends, ends, ends, values, values, values,
                                                                       strict=True):
                    code = status[there] if there < known else 0
                    if flags & SENDS and allowed[code]:
                        degree += 1
                        if weight >= loose:
                            found.append((there, cid, weight, created, decayed, code))
                if not degree:
                    continue
                cut = loose if degree <= hub else floor.at(here, degree)
                edges = []
                for there, cid, weight, created, decayed, code in found:
                    if weight < cut or there in relayed:
                        continue
                    # policy.conduit_weight, inlined: this loop runs for every conduit a retrieval reaches
                    since = created + grace
                    if decayed > since:
                        since = decayed
                    if now > since and weight > weight_floor:
                        weight = (weight_floor if half_life <= 0
                                  else weight_floor + (weight - weight_floor) * 0.5 ** ((now - since) / half_life))
                        if weight < cut:  # decayed under the floor
                            continue
                    edges.append(new(Edge, (there, weight, cid, names[code])))  # Edge(...) without its __new__
                out[here] = Reach(degree, edges)
            return out

    def in_status(self, ids: Iterable[int], statuses: Sequence[str]) -> set[int]:
        """What ``graph.selectors.grains_in_status`` answers: those of ``ids`` whose status is in ``statuses``."""
        with self._lock:
            status, known, allowed = self._status, len(self._status), self._allowed(statuses)
            return {gid for gid in ids if gid < known and allowed[status[gid]]}

    def _allowed(self, statuses: Sequence[str]) -> bytes:
        """By status code, whether a grain with that status is wanted (code 0, no grain, never is)."""
        return bytes(code > 0 and name in statuses for code, name in enumerate(self._statuses.names))

    def rank_inputs(self, ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy, now: float,
                    recency_half_life: float, recency_floor: float) -> tuple[dict[int, RankInput], dict[int, str]]:
        """What ``graph.selectors.grain_rank_inputs`` answers."""
        with self._lock:
            inputs: dict[int, RankInput] = {}
            status: dict[int, str] = {}
            allowed = set(statuses)
            for gid in ids:
                g = self.grains.get(gid)
                if g is None or g.status not in allowed:
                    continue
                inputs[gid] = g.rank_input(policy, now, recency_half_life, recency_floor)
                status[gid] = g.status
            return inputs, status

    def related(self, ids: Iterable[int], kind: str, *, outgoing_only: bool = False) -> dict[int, list[int]]:
        """For each of ``ids``, the grains at the other end of its conduits of ``kind`` (only those it is the
        source of, with ``outgoing_only``), in ascending order."""
        with self._lock:
            out: dict[int, list[int]] = {}
            wanted = self._kinds.code(kind) << 2
            for gid in ids:
                packed = self._incident.get(gid)
                if packed is None:
                    continue
                ends = packed[0]
                found = [there for there, flags in zip(ends[::3], ends[2::3], strict=True)
                         if flags & ~3 == wanted and (flags & SOURCE or not outgoing_only)]
                if found:
                    out[gid] = sorted(found)
            return out


def _room(by_id: Sized, gid: int) -> int:
    """How many places a sequence kept by grain id grows by to hold ``gid`` (a quarter more at least)."""
    return max(gid + 1, len(by_id) * 5 // 4) - len(by_id)


SENDS, SOURCE = 1, 2  # a conduit's flags at one end: signal passes along it from here; here is its source


class _Codes:
    """Small numbers for the few names a field takes (statuses, kinds), 0 left for none."""

    def __init__(self) -> None:
        self.names: list[str] = [""]
        self._by_name: dict[str, int] = {}

    def code(self, name: str) -> int:
        found = self._by_name.get(name)
        if found is None:
            found = self._by_name[name] = len(self.names)
            self.names.append(name)
        return found
